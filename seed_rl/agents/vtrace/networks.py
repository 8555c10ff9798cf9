"""Actor-critic networks for the V-trace learner.

Every agent is a Keras model called as
`agent(prev_actions, env_outputs, core_state, unroll=False, is_training=False)`, returning
`(AgentOutput, new_core_state)`. Without `unroll` the inputs are `[B, ...]` (one inference
step); with `unroll` they are time-major `[T, B, ...]` (training). The recurrent state is reset
to `initial_state` before every step whose `done` flag says a new episode starts.
`initial_state(batch_size)` gives the zero state; `()` for feed-forward agents.
"""

import collections
from typing import Sequence

import tensorflow as tf

from seed_rl.common import utils

AgentOutput = collections.namedtuple('AgentOutput', 'action policy_logits baseline')


def _reset_where_done(done, state, initial_state):
  """Replaces the rows of `state` whose episode starts now by the initial state."""
  def select(initial, current):
    mask = tf.reshape(done, [-1] + [1] * (current.shape.rank - 1))
    return tf.where(mask, initial, current)
  return tf.nest.map_structure(select, initial_state, state)


def track_layers(model: tf.keras.layers.Layer, name: str, layers: Sequence) -> list:
  """Makes `layers` (a possibly nested list) visible to `tf.train.Checkpoint`.

  Keras 3 tracks layers held in lists for its own weights, but `tf.train.Checkpoint` only sees
  layers held directly in attributes, so each one also gets an attribute `{name}_{index}`.
  Returns `layers` for storing as the list the model uses.
  """
  for index, layer in enumerate(layers):
    if isinstance(layer, (list, tuple)):
      track_layers(model, f'{name}_{index}', layer)
    else:
      setattr(model, f'{name}_{index}', layer)
  return list(layers)


def unroll_lstm_cells(cells, inputs, done, core_state, initial_state):
  """Runs a stack of LSTM cells over time `[T, B, F]`, resetting state at episode starts.

  `core_state` and `initial_state` are `((h, c), ...)`, one pair per cell; before step t the
  rows whose `done[t]` is set restart from `initial_state`. Returns `(outputs [T, B, units],
  final core_state)`.
  """
  outputs = []
  for step_input, step_done in zip(tf.unstack(inputs), tf.unstack(done)):
    core_state = _reset_where_done(step_done, core_state, initial_state)
    new_state = []
    for cell, (h, c) in zip(cells, core_state):
      step_input, (h, c) = cell(step_input, [h, c])
      new_state.append((h, c))
    core_state = tuple(new_state)
    outputs.append(step_input)
  return tf.stack(outputs), core_state


class _RecurrentAgent(tf.keras.Model):
  """Shared plumbing: time dimension handling, LSTM stack with resets, heads and sampling.

  Subclasses define `_torso(prev_actions, env_outputs)` (applied to `[N, ...]` inputs, with
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
    return tuple((tf.zeros([batch_size, cell.units]), tf.zeros([batch_size, cell.units]))
                 for cell in self._cells)

  def _core(self, torso_outputs, done, core_state):
    if not self._cells:
      return torso_outputs, core_state
    return unroll_lstm_cells(self._cells, torso_outputs, done, core_state,
                             self.initial_state(tf.shape(done)[1]))

  def _head(self, core_output):
    policy_logits = self._policy_logits(core_output)
    baseline = tf.squeeze(self._baseline(core_output), axis=-1)
    return AgentOutput(self._sample(policy_logits), policy_logits, baseline)

  def call(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
    if not unroll:
      prev_actions, env_outputs = tf.nest.map_structure(
          lambda t: t[tf.newaxis], (prev_actions, env_outputs))
    torso_outputs = utils.batch_apply(self._torso, (prev_actions, env_outputs))
    core_outputs, core_state = self._core(torso_outputs, env_outputs.done, core_state)
    outputs = utils.batch_apply(self._head, (core_outputs,))
    if not unroll:
      outputs = tf.nest.map_structure(lambda t: t[0], outputs)
    return outputs, core_state

  @tf.function
  def get_action(self, *args, **kwargs):
    return self(*args, **kwargs)


class MLPandLSTM(_RecurrentAgent):
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


class _ResidualBlock(tf.keras.layers.Layer):
  """ReLU, conv, ReLU, conv, plus the input."""

  def __init__(self, num_channels: int, **kwargs):
    super().__init__(**kwargs)
    self._conv_1 = tf.keras.layers.Conv2D(num_channels, 3, padding='same')
    self._conv_2 = tf.keras.layers.Conv2D(num_channels, 3, padding='same')

  def call(self, x):
    return x + self._conv_2(tf.nn.relu(self._conv_1(tf.nn.relu(x))))


class ImpalaDeep(_RecurrentAgent):
  """The deep IMPALA network (Espeholt et al. 2018) for image observations.

  Three ResNet stacks (16, 32, 32 channels; conv, 3x3 max-pool with stride 2, two residual
  blocks), a 256-unit dense layer, the reward clipped to [-1, 1] and the one-hot previous action,
  an LSTM of 256 units, and categorical policy and baseline heads. Used for Atari and DMLab.
  """

  def __init__(self, num_actions: int):
    num_actions = int(num_actions)  # Gymnasium gives numpy integers; Keras wants int.
    super().__init__(num_actions, [256], name='ImpalaDeep')
    self._num_actions = num_actions
    stacks = []
    for i, (num_channels, num_blocks) in enumerate([(16, 2), (32, 2), (32, 2)]):
      layers = [tf.keras.layers.Conv2D(num_channels, 3, padding='same', name=f'conv_{i}'),
                tf.keras.layers.MaxPool2D(3, strides=2, padding='same')]
      layers += [_ResidualBlock(num_channels, name=f'residual_{i}_{j}')
                 for j in range(num_blocks)]
      stacks.append(layers)
    self._stacks = track_layers(self, '_stack', stacks)
    self._flatten = tf.keras.layers.Flatten()
    self._fc = tf.keras.layers.Dense(256, activation='relu', name='fc')

  def _torso(self, prev_actions, env_outputs):
    x = tf.cast(env_outputs.observation, tf.float32) / 255.
    for layers in self._stacks:
      for layer in layers:
        x = layer(x)
    x = self._fc(self._flatten(tf.nn.relu(x)))
    clipped_reward = tf.clip_by_value(env_outputs.reward, -1., 1.)[:, tf.newaxis]
    one_hot_prev_action = tf.one_hot(prev_actions, self._num_actions)
    return tf.concat([x, clipped_reward, one_hot_prev_action], axis=1)

  def _sample(self, policy_logits):
    return tf.random.categorical(policy_logits, 1, dtype=tf.int64)[:, 0]
