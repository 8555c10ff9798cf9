"""What the on-policy agent's entry points share: gin parsing, the agent and the optimizer.

The loss, the networks and the action distribution are configured with gin (the package ships
`seed_rl/environments/mujoco/gin/ppo.gin`); batch sizes, epochs and the learning rate are flags.
Keras initializers, optimizers, LayerNormalization and a few TensorFlow functions are
registered so that gin files can name them (`@tf.keras.initializers.Orthogonal()`, `@tf.tanh`).
"""

import os
from typing import Any, Callable, Optional, Sequence, Tuple

import gin
import tensorflow as tf

# pylint: disable=unused-import  (registers the gin configurables)
from seed_rl.agents.policy_gradient import learner
from seed_rl.agents.policy_gradient.modules import advantages
from seed_rl.agents.policy_gradient.modules import constraints
from seed_rl.agents.policy_gradient.modules import continuous_control_agent
from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.agents.policy_gradient.modules import policy_losses
from seed_rl.agents.policy_gradient.modules import policy_regularizers
from seed_rl.common.training import popart
from seed_rl.common.training import running_statistics
# pylint: enable=unused-import
from seed_rl.common.training import optimizers

PPO_GIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                       'environments', 'mujoco', 'gin', 'ppo.gin')


def _register_external_configurables() -> None:
  for module, names in [
      ('tf.keras.initializers', ['Orthogonal', 'GlorotUniform', 'GlorotNormal', 'HeNormal',
                                 'HeUniform', 'VarianceScaling', 'Zeros', 'Constant']),
      ('tf.keras.optimizers', ['Adam', 'SGD', 'RMSprop']),
      ('tf.keras.layers', ['LayerNormalization'])]:
    namespace = eval(module, {'tf': tf})  # pylint: disable=eval-used
    for name in names:
      gin.external_configurable(getattr(namespace, name), name=name, module=module)
  for name, fn in [('exp', tf.exp), ('tanh', tf.tanh), ('nn.relu', tf.nn.relu),
                   ('nn.swish', tf.nn.swish), ('nn.elu', tf.nn.elu)]:
    gin.external_configurable(fn, name=name, module='tf')


_register_external_configurables()


def parse_gin(gin_config: Optional[str], gin_bindings: Sequence[str]) -> None:
  """Reads `gin_config` (default: the packaged ppo.gin) and then the bindings, where `__`
  stands for `/` (e.g. `hidden__Orthogonal.gain=1.0`, convenient on command lines)."""
  gin.parse_config_files_and_bindings([gin_config or PPO_GIN],
                                      [binding.replace('__', '/') for binding in gin_bindings])


def create_agent(action_space: Any, unused_observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """The gin-configured `ContinuousControlAgent` (any action space with a distribution).

  A scale independent of the input (`std_independent_of_input`, on in ppo.gin) belongs to
  continuous actions: the logits of discrete actions all come from the network, whatever gin
  says.
  """
  discrete = {} if type(action_space).__name__ == 'Box' else {'std_independent_of_input': False}
  return continuous_control_agent.ContinuousControlAgent(
      parametric_action_distribution=parametric_action_distribution, **discrete)


@gin.configurable
def create_optimizer(final_iteration: int, learning_rate: float, lr_decay_multiplier: float,
                     optimizer_fn: Callable[..., Any] = tf.keras.optimizers.Adam
                     ) -> Tuple[Any, Callable[[Any], Any]]:
  """`optimizer_fn(learning_rate_fn)` whose learning rate decays linearly over the
  `final_iteration` optimizer steps to `learning_rate * lr_decay_multiplier` (constant when the
  multiplier is 1)."""
  learning_rate_fn = optimizers.linear_decay(learning_rate, lr_decay_multiplier, final_iteration)
  rate = learning_rate if lr_decay_multiplier == 1 else learning_rate_fn
  return optimizer_fn(rate), learning_rate_fn
