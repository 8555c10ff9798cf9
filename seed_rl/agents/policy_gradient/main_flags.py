"""Flags every on-policy (PPO) entry point shares: the gin configuration and the optimizer.

TensorFlow-free, so that actors can import it; the learner-side functions import TensorFlow
when they run.
"""

from typing import Any, Callable, Tuple

from absl import flags

from seed_rl.agents.policy_gradient import learner_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 3e-4, 'Adam learning rate (at the first step).')
flags.DEFINE_float('lr_decay_multiplier', 0.,
                   'The learning rate decays linearly to learning_rate x lr_decay_multiplier '
                   'over the training (1: constant).')
flags.DEFINE_string('gin_config', None,
                    'Gin file of the loss, networks and action distribution; default: the '
                    'packaged ppo.gin.')
flags.DEFINE_multi_string('gin_bindings', [],
                          'Gin bindings applied after --gin_config, e.g. '
                          '"ppo.epsilon=0.1" ("__" stands for "/").')


def parse_gin() -> None:
  """Reads --gin_config and --gin_bindings (in the learner, before it starts)."""
  from seed_rl.agents.policy_gradient import gin_setup  # pylint: disable=g-import-not-at-top
  gin_setup.parse_gin(FLAGS.gin_config, FLAGS.gin_bindings)


def create_agent(action_space: Any, observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """The gin-configured `ContinuousControlAgent`."""
  from seed_rl.agents.policy_gradient import gin_setup  # pylint: disable=g-import-not-at-top
  return gin_setup.create_agent(action_space, observation_space, parametric_action_distribution)


def create_optimizer(final_iteration: int) -> Tuple[Any, Callable[[Any], Any]]:
  """The gin-configured optimizer with --learning_rate decaying by --lr_decay_multiplier."""
  from seed_rl.agents.policy_gradient import gin_setup  # pylint: disable=g-import-not-at-top
  return gin_setup.create_optimizer(final_iteration, learning_rate=FLAGS.learning_rate,
                                    lr_decay_multiplier=FLAGS.lr_decay_multiplier)
