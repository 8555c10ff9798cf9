r"""R2D2 on Atari with the dueling LSTM Q-network: learner or actor by --run_mode.

  python -m seed_rl.environments.atari.r2d2_main --run_mode=learner --game=Pong
  python -m seed_rl.environments.atari.r2d2_main --run_mode=actor --task=0

Frames are stacked inside the network (actors send single frames). The defaults are the
original's, for a cluster; `--flagfile=seed_rl/environments/atari/one_machine/r2d2.flags` holds the
settings for one machine without a GPU. `--network=minimal` (an MLP and an LSTM of 8 units)
measures the pipeline's own cost; it does not learn Atari. Actors import no TensorFlow: the network
and the optimizer import it when the learner calls them. The module-level `LEARNER_MODULE`,
`create_agent`, `create_optimizer` and `create_config` are what `main` runs, named so that tools
(the bench's compute ceiling) can run the same agent.
"""

from collections.abc import Callable, Sequence
from typing import Any

from absl import app
from absl import flags

from seed_rl.agents.r2d2 import config as agent_config
from seed_rl.agents.r2d2 import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.atari import env
from seed_rl.environments.atari import env_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 0.00048, 'Adam learning rate.')
flags.DEFINE_float('adam_epsilon', 1e-3, 'Adam epsilon.')
flags.DEFINE_integer('stack_size', 4, 'Frames stacked by the network (at most 4).')
flags.DEFINE_enum('network', 'impala', ['impala', 'nature', 'minimal'],
                  'impala: DuelingLSTMDQNNet, the original\'s (Nature-DQN torso, LSTM, dueling '
                  'head). nature: the same without its LSTM (the stacked frames its only memory). '
                  'minimal: an MLP and an LSTM of 8 units, which measure the pipeline\'s own cost '
                  'and do not learn Atari.')

LEARNER_MODULE = 'seed_rl.agents.r2d2.learner'
create_config = agent_config.R2D2Config.from_flags


def create_agent(env_output_specs: Any, num_actions: int) -> Any:
  """The network of `--network`."""
  # pylint: disable=g-import-not-at-top
  if FLAGS.network == 'minimal':
    from seed_rl.environments.atari import minimal_networks
    return minimal_networks.create_r2d2_network(num_actions)
  if FLAGS.network == 'nature':
    from seed_rl.environments.atari import nature_networks
    return nature_networks.NatureDQNNet(num_actions, env_output_specs.observation.shape,
                                        FLAGS.stack_size)
  from seed_rl.environments.atari import networks
  return networks.DuelingLSTMDQNNet(num_actions, env_output_specs.observation.shape,
                                    FLAGS.stack_size)


def create_optimizer(unused_final_iteration: int) -> tuple[Any, Callable[[Any], Any]]:
  """Adam at the constant --learning_rate."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  optimizer = tf.keras.optimizers.Adam(FLAGS.learning_rate, epsilon=FLAGS.adam_epsilon)
  return optimizer, lambda iteration: FLAGS.learning_rate


def main(argv: Sequence[str],
         create_env_fn: Callable[[int, Any], Any] = env.create_environment) -> None:
  """The learner or an actor on `create_env_fn`'s environments (the Atari game of --game)."""
  entry_point.run(argv, create_env_fn, LEARNER_MODULE, create_agent, create_optimizer,
                  create_config_fn=create_config)


if __name__ == '__main__':
  app.run(main)
