r"""V-trace on any Gymnasium environment: learner or actor, chosen by --run_mode.

  python -m seed_rl.environments.gym.vtrace_main --run_mode=learner --env_name=CartPole-v1
  python -m seed_rl.environments.gym.vtrace_main --run_mode=actor --task=0

Actors import no TensorFlow: the network and the optimizer import it when the learner calls them.
"""

from absl import app
from absl import flags

from seed_rl.agents.vtrace import config as agent_config
from seed_rl.agents.vtrace import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.gym import env
from seed_rl.environments.gym import env_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 1e-3, 'Adam learning rate (at the first step).')
flags.DEFINE_float('lr_decay_multiplier', 1.,
                   'The learning rate decays linearly to learning_rate x lr_decay_multiplier '
                   'over the frame budget (1: constant).')
flags.DEFINE_list('mlp_sizes', ['64', '64'], 'Hidden layer sizes of the MLP torso.')
flags.DEFINE_list('lstm_sizes', [], 'LSTM sizes after the MLP (none: feed-forward).')

# The learner's defaults are the original's, sized for Atari and DMLab; these suit classic
# control (docs/tuning.md has the settings compared): many small gradient steps, a small entropy
# bonus, lambda 0.95 for lower-variance targets, a learning rate decaying to 0 so that the policy
# stays where it got, and rewards scaled by 0.1 in the loss, so that the first advantages (values
# start at 0 against returns far from it) do not make the policy deterministic before it has
# found the goal.
for name, value in [('unroll_length', 10), ('batch_size', 4), ('entropy_cost', 0.001),
                    ('lambda_', 0.95), ('lr_decay_multiplier', 0.), ('reward_scaling', 0.1),
                    ('total_environment_frames', 5e5)]:
  FLAGS.set_default(name, value)


def create_agent(unused_action_space, unused_observation_space,
                 parametric_action_distribution):
  from seed_rl.agents.vtrace import networks  # pylint: disable=g-import-not-at-top
  return networks.MLPandLSTM(parametric_action_distribution,
                             mlp_sizes=[int(size) for size in FLAGS.mlp_sizes],
                             lstm_sizes=[int(size) for size in FLAGS.lstm_sizes])


def create_optimizer(final_iteration):
  from seed_rl.common.training import optimizers  # pylint: disable=g-import-not-at-top
  return optimizers.adam_with_linear_decay(FLAGS.learning_rate, FLAGS.lr_decay_multiplier,
                                           final_iteration)


def main(argv):
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.vtrace.learner', create_agent,
                  create_optimizer,
                  create_config_fn=agent_config.VTraceConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
