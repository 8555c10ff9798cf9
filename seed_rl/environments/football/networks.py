"""The V-trace network for Google Research Football: a feed-forward ResNet on the SMM.

The observation arrives bit-packed (`<uint16>[H, W, 1]`, see `observation`); the network
unpacks it into the 16 Super Mini Map planes (4 stacked frames x 4 planes) as its first op,
so actors send and the learner stores 8x less data. Frames are stacked by the environment, so
there is no LSTM (state `()`), and neither the reward nor the previous action is an input.
"""

from typing import Any

import tensorflow as tf

from seed_rl.agents.vtrace import networks as vtrace_networks
from seed_rl.common import networks
from seed_rl.environments.football import observation

# (channels, residual blocks) of each ResNet stack.
_STACK_SIZES = ((16, 2), (32, 2), (32, 2), (32, 2))
_INITIALIZER = 'lecun_normal'


class GFootball(vtrace_networks.RecurrentActorCritic):
  """The SEED RL Football agent: four ResNet stacks, a 256-unit dense layer, policy and value.

  Each stack is a 3x3 conv, a 3x3 max-pool with stride 2 and two residual blocks; channels
  (16, 32, 32, 32). All kernels use LeCun-normal initialisation, the heads included. Called
  like every V-trace agent: `agent(prev_actions, env_outputs, core_state, unroll=False,
  is_training=False)` -> `(AgentOutput(action, policy_logits, baseline), ())`.
  """

  def __init__(self, parametric_action_distribution: Any):
    super().__init__(parametric_action_distribution.param_size, lstm_sizes=[],
                     name='GFootball')
    self._parametric_action_distribution = parametric_action_distribution
    # The heads come from the shared plumbing; they are not built yet, so this sets the
    # initializer their kernels will be created with.
    for head in (self._policy_logits, self._baseline):
      head.kernel_initializer = tf.keras.initializers.get(_INITIALIZER)
    self._stacks = networks.track_layers(
        self, '_stack', vtrace_networks.resnet_stacks(_STACK_SIZES, _INITIALIZER))
    self._flatten = tf.keras.layers.Flatten()
    self._fc = tf.keras.layers.Dense(256, activation='relu', kernel_initializer=_INITIALIZER,
                                     name='fc')

  def _torso(self, unused_prev_actions, env_outputs):
    x = vtrace_networks.apply_stacks(self._stacks,
                                     observation.unpackbits(env_outputs.observation) / 255.)
    return self._fc(self._flatten(tf.nn.relu(x)))

  def _sample(self, policy_logits):
    return self._parametric_action_distribution(policy_logits).sample()
