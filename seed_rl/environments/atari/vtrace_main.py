r"""V-trace (IMPALA) on Atari: learner or actor by --run_mode.

  python -m seed_rl.environments.atari.vtrace_main --run_mode=learner --game=Pong
  python -m seed_rl.environments.atari.vtrace_main --run_mode=actor --task=0

The defaults are the original's: the deep IMPALA network and IMPALA's settings, for a GPU or a
cluster. `--flagfile=seed_rl/environments/atari/one_machine/vtrace.flags` holds the settings that
learn Pong on one machine without a GPU (the Nature-DQN network, PPO's Atari batches).

Actors import no TensorFlow: the network and the optimizer import it when the learner calls them.
"""

from absl import app
from absl import flags

from seed_rl.agents.vtrace import config as agent_config
from seed_rl.agents.vtrace import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.atari import env
from seed_rl.environments.atari import env_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 0.00048, 'Adam learning rate (decays linearly to 0).')
flags.DEFINE_float('adam_epsilon', 3.125e-7, 'Adam epsilon.')
flags.DEFINE_enum('network', 'impala', ['impala', 'nature'],
                  'impala: ImpalaDeep, the original\'s (residual stacks and an LSTM). nature: the '
                  'Nature-DQN torso on --stack_size frames stacked inside the network, no LSTM '
                  '(far less compute).')
flags.DEFINE_integer('stack_size', 4,
                     '--network=nature: frames stacked inside the network (at most 4).')

# IMPALA's Atari settings (Espeholt et al. 2018): 20-step unrolls, entropy cost 0.01, rewards
# clipped to [-1, 1] in the loss.
for name, value in [('unroll_length', 20), ('entropy_cost', 0.01), ('max_abs_reward', 1.),
                    ('total_environment_frames', 2e8)]:
  FLAGS.set_default(name, value)


def create_agent(action_space, observation_space, parametric_action_distribution):
  """The network of `--network`."""
  # pylint: disable=g-import-not-at-top
  if FLAGS.network == 'nature':
    from seed_rl.environments.atari import nature_networks
    return nature_networks.NatureActorCritic(parametric_action_distribution,
                                             stack_size=FLAGS.stack_size,
                                             observation_shape=observation_space.shape)
  from seed_rl.agents.vtrace import networks
  return networks.ImpalaDeep(action_space.n)


def create_optimizer(final_iteration):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  learning_rate_fn = tf.keras.optimizers.schedules.PolynomialDecay(
      FLAGS.learning_rate, final_iteration, 0)
  optimizer = tf.keras.optimizers.Adam(learning_rate_fn, beta_1=0, epsilon=FLAGS.adam_epsilon)
  return optimizer, learning_rate_fn


def main(argv):
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.vtrace.learner', create_agent,
                  create_optimizer,
                  create_config_fn=agent_config.VTraceConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
