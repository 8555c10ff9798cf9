r"""R2D2 on any Gymnasium environment with Discrete actions: learner or actor by --run_mode.

  python -m seed_rl.environments.gym.r2d2_main --run_mode=learner --env_name=CartPole-v1
  python -m seed_rl.environments.gym.r2d2_main --run_mode=actor --task=0

Actors import no TensorFlow: the network and the optimizer import it when the learner calls them.
"""

from absl import app
from absl import flags

from seed_rl.agents.r2d2 import config as agent_config
from seed_rl.agents.r2d2 import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.gym import env
from seed_rl.environments.gym import env_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 1e-3, 'Adam learning rate (at the first step).')
flags.DEFINE_float('lr_decay_multiplier', 1.,
                   'The learning rate decays linearly to learning_rate x lr_decay_multiplier '
                   'over the frame budget (1: constant).')
flags.DEFINE_float('adam_epsilon', 1e-3, 'Adam epsilon.')
flags.DEFINE_list('mlp_sizes', ['64'], 'Hidden layer sizes of the MLP torso.')
flags.DEFINE_integer('lstm_size', 64, 'Units of the LSTM (0: none, a feed-forward Q-network).')

# The learner's defaults are the original's, sized for Atari; these suit classic control
# (docs/tuning.md has the settings compared): a target network copied every 50 steps, milder
# exploration than Ape-X's 0.4 with 16 environments, a learning rate decaying to 0 over the
# budget, 10-step returns (they carry a pole lost far ahead to the Q-values sooner) and a replay
# holding a large share of the budget's unrolls (a smaller one forgets how episodes fail).
for name, value in [('unroll_length', 20), ('burn_in', 10), ('batch_size', 32),
                    ('replay_ratio', 4.), ('replay_buffer_size', 10000),
                    ('replay_buffer_min_size', 100), ('update_target_every_n_step', 50),
                    ('exploration_epsilon', 0.2), ('lr_decay_multiplier', 0.),
                    ('n_steps', 10), ('discounting', .99), ('total_environment_frames', 5e5)]:
  FLAGS.set_default(name, value)


def create_agent(unused_env_output_specs, num_actions):
  from seed_rl.agents.r2d2 import networks  # pylint: disable=g-import-not-at-top
  return networks.RecurrentQNetwork(num_actions,
                                    mlp_sizes=[int(size) for size in FLAGS.mlp_sizes],
                                    lstm_size=FLAGS.lstm_size)


def create_optimizer(final_iteration):
  from seed_rl.common.training import optimizers  # pylint: disable=g-import-not-at-top
  return optimizers.adam_with_linear_decay(FLAGS.learning_rate, FLAGS.lr_decay_multiplier,
                                           final_iteration, epsilon=FLAGS.adam_epsilon)


def main(argv):
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.r2d2.learner', create_agent,
                  create_optimizer,
                  create_config_fn=agent_config.R2D2Config.from_flags)


if __name__ == '__main__':
  app.run(main)
