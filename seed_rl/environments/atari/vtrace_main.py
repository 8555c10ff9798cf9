r"""V-trace (IMPALA) on Atari: learner or actor by --run_mode.

  python -m seed_rl.environments.atari.vtrace_main --run_mode=learner --game=Pong
  python -m seed_rl.environments.atari.vtrace_main --run_mode=actor --task=0

The defaults are the original's: the deep IMPALA network and IMPALA's settings, for a GPU or a
cluster. `--flagfile=seed_rl/environments/atari/one_machine/vtrace.flags` holds the settings that
learn Pong on one machine without a GPU (the Nature-DQN network, PPO's Atari batches).

`--network=minimal` (an MLP of 8 units) measures the pipeline's own cost; it does not learn Atari.
Actors import no TensorFlow: the network and the optimizer import it when the learner calls them.
The module-level `LEARNER_MODULE`, `create_agent`, `create_optimizer` and `create_config` are what
`main` runs, named so that tools (the bench's compute ceiling) can run the same agent.
"""

from collections.abc import Callable, Sequence
from typing import Any

from absl import app
from absl import flags

from seed_rl.agents.vtrace import config as agent_config
from seed_rl.agents.vtrace import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.atari import env
from seed_rl.environments.atari import env_flags  # noqa: F401  (defines flags)
from seed_rl.environments.atari import network_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 0.00048, 'Adam learning rate (decays linearly to 0).')
flags.DEFINE_float('adam_epsilon', 3.125e-7, 'Adam epsilon.')
flags.DEFINE_enum('network', 'impala', ['impala', 'nature', 'minimal'],
                  'impala: ImpalaDeep, the original\'s (residual stacks and an LSTM). nature: the '
                  'Nature-DQN torso on --stack_size frames stacked inside the network, no LSTM '
                  '(far less compute; --initialization). minimal: an MLP of 8 units, which '
                  'measures the pipeline\'s own cost and does not learn Atari.')
flags.DEFINE_integer('stack_size', 4,
                     '--network=nature: frames stacked inside the network (at most 4).')

# IMPALA's Atari settings (Espeholt et al. 2018): 20-step unrolls, entropy cost 0.01, rewards
# clipped to [-1, 1] in the loss.
for name, value in [('unroll_length', 20), ('entropy_cost', 0.01), ('max_abs_reward', 1.),
                    ('total_environment_frames', 2e8)]:
  FLAGS.set_default(name, value)


LEARNER_MODULE = 'seed_rl.agents.vtrace.learner'
create_config = agent_config.VTraceConfig.from_flags


def create_agent(action_space: Any, observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """The network of `--network`."""
  # pylint: disable=g-import-not-at-top
  if FLAGS.network == 'nature':
    from seed_rl.environments.atari import nature_networks
    return nature_networks.NatureActorCritic(parametric_action_distribution,
                                             stack_size=FLAGS.stack_size,
                                             observation_shape=observation_space.shape,
                                             initialization=FLAGS.initialization)
  if FLAGS.network == 'minimal':
    from seed_rl.environments.atari import minimal_networks
    return minimal_networks.create_vtrace_network(parametric_action_distribution)
  from seed_rl.agents.vtrace import networks
  return networks.ImpalaDeep(action_space.n)


def create_optimizer(final_iteration: int) -> tuple[Any, Callable[[Any], Any]]:
  """Adam with beta1 0, its rate decaying linearly from --learning_rate to 0."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  learning_rate_fn = tf.keras.optimizers.schedules.PolynomialDecay(
      FLAGS.learning_rate, final_iteration, 0)
  optimizer = tf.keras.optimizers.Adam(learning_rate_fn, beta_1=0, epsilon=FLAGS.adam_epsilon)
  return optimizer, learning_rate_fn


def main(argv: Sequence[str],
         create_env_fn: Callable[[int, Any], Any] = env.create_environment) -> None:
  """The learner or an actor on `create_env_fn`'s environments (the Atari game of --game)."""
  entry_point.run(argv, create_env_fn, LEARNER_MODULE, create_agent, create_optimizer,
                  create_config_fn=create_config)


if __name__ == '__main__':
  app.run(main)
