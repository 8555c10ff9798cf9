r"""V-trace (IMPALA) on DeepMind Lab with the deep IMPALA network: learner or actor by --run_mode.

  python -m seed_rl.environments.dmlab.vtrace_main --run_mode=learner \
      --game=explore_goal_locations_small
  python -m seed_rl.environments.dmlab.vtrace_main --run_mode=actor --task=0

Both modes need DeepMind Lab (the learner creates one env for the observation and action
specs); without it the process stops at once and says how to get it (docker/Dockerfile.dmlab).
Actors import no TensorFlow: the network and the optimizer import it when the learner calls them.
"""

from collections.abc import Sequence
from typing import Any

from absl import app
from absl import flags

from seed_rl.agents.vtrace import config as agent_config
from seed_rl.agents.vtrace import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.dmlab import env
from seed_rl.environments.dmlab import env_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 0.00048, 'Adam learning rate (decays linearly to 0).')
flags.DEFINE_float('adam_epsilon', 3.125e-7, 'Adam epsilon.')


def create_agent(action_space: Any, unused_observation_space: Any,
                 unused_parametric_action_distribution: Any) -> Any:
  """`ImpalaDeep` with one logit per discrete action (9 with the default action set)."""
  from seed_rl.environments.dmlab import networks  # pylint: disable=g-import-not-at-top
  return networks.ImpalaDeep(action_space.n)


def create_optimizer(final_iteration: int) -> tuple[Any, Any]:
  """Adam without momentum (beta1 = 0), its learning rate decaying linearly to 0 over training."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  learning_rate_fn = tf.keras.optimizers.schedules.PolynomialDecay(
      FLAGS.learning_rate, final_iteration, 0)
  optimizer = tf.keras.optimizers.Adam(learning_rate_fn, beta_1=0, epsilon=FLAGS.adam_epsilon)
  return optimizer, learning_rate_fn


def main(argv: Sequence[str]) -> None:
  env.exit_if_deepmind_lab_missing()
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.vtrace.learner', create_agent,
                  create_optimizer,
                  create_config_fn=agent_config.VTraceConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
