r"""V-trace (IMPALA) on Google Research Football with the GFootball network.

  python -m seed_rl.environments.football.vtrace_main --run_mode=learner \
      --game=academy_empty_goal_close
  python -m seed_rl.environments.football.vtrace_main --run_mode=actor --task=0

or everything at once: `./run_local.sh football vtrace 4`. gfootball must be installed first
(`seed_rl/environments/football/install.sh PYTHON`; run_local.sh does it). Actors import no
TensorFlow: the network and the optimizer import it when the learner calls them.
"""

from collections.abc import Callable
from typing import Any

from absl import app, flags

from seed_rl.agents.vtrace import config as agent_config
from seed_rl.agents.vtrace import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.football import (
  env,
  env_flags,  # noqa: F401  (defines flags)
)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 0.00048, 'Adam learning rate (constant).')


def create_agent(unused_action_space: Any, unused_observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """The SEED GFootball network (feed-forward: the env stacks the frames)."""
  from seed_rl.environments.football import networks  # pylint: disable=g-import-not-at-top
  return networks.GFootball(parametric_action_distribution)


def create_optimizer(unused_final_iteration: int) -> tuple[Any, Callable[[Any], float]]:
  """Adam with a constant learning rate and Keras' default epsilon, as the original."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  learning_rate_fn = lambda iteration: FLAGS.learning_rate
  optimizer = tf.keras.optimizers.Adam(FLAGS.learning_rate)
  return optimizer, learning_rate_fn


def main(argv: list[str]) -> None:
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.vtrace.learner', create_agent,
                  create_optimizer,
                  create_config_fn=agent_config.VTraceConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
