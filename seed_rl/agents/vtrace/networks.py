"""Actor-critic networks for the V-trace learner.

Every agent is a Keras model called as
`agent(prev_actions, env_outputs, core_state, unroll=False, is_training=False)`, returning
`(AgentOutput, new_core_state)`. Without `unroll` the inputs are `[B, ...]` (one inference
step); with `unroll` they are time-major `[T, B, ...]` (training). The recurrent state is reset
to `initial_state` before every step whose `done` flag says a new episode starts.
`initial_state(batch_size)` gives the zero state; `()` for feed-forward agents. `env_outputs` is
an `EnvOutput` or a 5-tuple in its order. The plumbing behind this convention is shared by all
networks and lives in `seed_rl.common.networks`.
"""

import collections
from typing import Sequence

import tensorflow as tf

from seed_rl.common import networks as common_networks
from seed_rl.common.networks import track_layers

AgentOutput = collections.namedtuple('AgentOutput', 'action policy_logits baseline')


class RecurrentActorCritic(tf.keras.Model):
  """The V-trace network base: torso, LSTM stack with resets, policy and baseline heads, sampling.

  Environment networks (e.g. Football's) subclass it too. Subclasses define `_torso(prev_actions, env_outputs)` (applied to `[N, ...]` inputs, with
  N = T*B) and `_sample(policy_logits)`.
  """

  def __init__(self, num_policy_params: int, lstm_sizes: Sequence[int], name: str):
    super().__init__(name=name)
    self._cells = track_layers(
        self, '_cell', [tf.keras.layers.LSTMCell(size) for size in lstm_sizes])
    self._policy_logits = tf.keras.layers.Dense(num_policy_params, name='policy_logits')
    self._baseline = tf.keras.layers.Dense(1, name='baseline')

  def initial_state(self, batch_size):
    """Zero LSTM state `((h, c), ...)` per cell; `()` without LSTM."""
    return self._initial_core_state(batch_size)

  def _initial_core_state(self, batch_size):
    """The LSTMs' part of the state (all of it here; subclasses may add to `initial_state`)."""
    return tuple((tf.zeros([batch_size, cell.units]), tf.zeros([batch_size, cell.units]))
                 for cell in self._cells)

  def _core(self, torso_outputs, done, core_state):
    if not self._cells:
      return torso_outputs, core_state
    return common_networks.unroll_recurrent(
        common_networks.lstm_stack_step(self._cells), torso_outputs, done, core_state,
        self._initial_core_state(tf.shape(done)[1]))

  def _head(self, core_output):
    policy_logits = self._policy_logits(core_output)
    baseline = tf.squeeze(self._baseline(core_output), axis=-1)
    return AgentOutput(self._sample(policy_logits), policy_logits, baseline)

  def call(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
    return common_networks.apply_step_or_unroll(
        common_networks.torso_core_head(self._torso, self._core, self._head),
        prev_actions, env_outputs, core_state, unroll)

  @tf.function
  def get_action(self, *args, **kwargs):
    return self(*args, **kwargs)


class MLPandLSTM(RecurrentActorCritic):
  """MLP torso on the observation, optional LSTM stack, policy and baseline heads.

  The generic agent for vector observations (Gymnasium classic control, MuJoCo).
  """

  def __init__(self, parametric_action_distribution, mlp_sizes: Sequence[int],
               lstm_sizes: Sequence[int] = ()):
    super().__init__(parametric_action_distribution.param_size, lstm_sizes, name='MLPandLSTM')
    self._parametric_action_distribution = parametric_action_distribution
    self._mlp = track_layers(self, '_mlp', [
        tf.keras.layers.Dense(size, activation='relu', name=f'mlp_{i}')
        for i, size in enumerate(mlp_sizes)])

  def _torso(self, unused_prev_actions, env_outputs):
    x = tf.cast(env_outputs.observation, tf.float32)
    x = tf.reshape(x, [tf.shape(x)[0], -1])
    for layer in self._mlp:
      x = layer(x)
    return x

  def _sample(self, policy_logits):
    return self._parametric_action_distribution(policy_logits).sample()


class ResidualBlock(tf.keras.layers.Layer):
  """ReLU, 3x3 conv, ReLU, 3x3 conv, plus the input: the block of IMPALA's ResNet stacks."""

  def __init__(self, num_channels: int, kernel_initializer: str = 'glorot_uniform', **kwargs):
    super().__init__(**kwargs)
    self._conv_1 = tf.keras.layers.Conv2D(num_channels, 3, padding='same',
                                          kernel_initializer=kernel_initializer)
    self._conv_2 = tf.keras.layers.Conv2D(num_channels, 3, padding='same',
                                          kernel_initializer=kernel_initializer)

  def call(self, x):
    return x + self._conv_2(tf.nn.relu(self._conv_1(tf.nn.relu(x))))


def resnet_stacks(stack_sizes: Sequence[tuple[int, int]],
                  kernel_initializer: str = 'glorot_uniform') -> list[list[tf.keras.layers.Layer]]:
  """The layers of IMPALA's ResNet stacks, one list per `(channels, residual blocks)` of
  `stack_sizes`: a 3x3 conv `conv_i`, a 3x3 max-pool with stride 2, then the blocks
  `residual_i_j`. Apply them in order with `apply_stacks`."""
  stacks = []
  for i, (num_channels, num_blocks) in enumerate(stack_sizes):
    layers = [tf.keras.layers.Conv2D(num_channels, 3, padding='same',
                                     kernel_initializer=kernel_initializer, name=f'conv_{i}'),
              tf.keras.layers.MaxPool2D(3, strides=2, padding='same')]
    layers += [ResidualBlock(num_channels, kernel_initializer, name=f'residual_{i}_{j}')
               for j in range(num_blocks)]
    stacks.append(layers)
  return stacks


def apply_stacks(stacks: Sequence[Sequence[tf.keras.layers.Layer]], x: tf.Tensor) -> tf.Tensor:
  """`x` through every layer of `resnet_stacks`, in order."""
  for layers in stacks:
    for layer in layers:
      x = layer(x)
  return x


class ImpalaDeep(RecurrentActorCritic):
  """The deep IMPALA network (Espeholt et al. 2018) for image observations.

  Three ResNet stacks (16, 32, 32 channels; conv, 3x3 max-pool with stride 2, two residual
  blocks), a 256-unit dense layer, the reward clipped to [-1, 1] and the one-hot previous action,
  an LSTM of 256 units, and categorical policy and baseline heads. Used for Atari and DMLab.
  """

  def __init__(self, num_actions: int):
    num_actions = int(num_actions)  # Gymnasium gives numpy integers; Keras wants int.
    super().__init__(num_actions, [256], name='ImpalaDeep')
    self._num_actions = num_actions
    self._stacks = track_layers(self, '_stack', resnet_stacks([(16, 2), (32, 2), (32, 2)]))
    self._flatten = tf.keras.layers.Flatten()
    self._fc = tf.keras.layers.Dense(256, activation='relu', name='fc')

  def _torso(self, prev_actions, env_outputs):
    x = apply_stacks(self._stacks, tf.cast(env_outputs.observation, tf.float32) / 255.)
    x = self._fc(self._flatten(tf.nn.relu(x)))
    clipped_reward = tf.clip_by_value(env_outputs.reward, -1., 1.)[:, tf.newaxis]
    one_hot_prev_action = tf.one_hot(prev_actions, self._num_actions)
    return tf.concat([x, clipped_reward, one_hot_prev_action], axis=1)

  def _sample(self, policy_logits):
    return tf.random.categorical(policy_logits, 1, dtype=tf.int64)[:, 0]
