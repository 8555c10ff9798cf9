"""A small (recurrent) Q-network for R2D2 on Gymnasium environments (vector observations)."""

import collections
from typing import Sequence

import tensorflow as tf

from seed_rl.common import networks

AgentOutput = collections.namedtuple('AgentOutput', 'action q_values')


class RecurrentQNetwork(tf.keras.Model):
  """MLP torso on the observation, reward and one-hot previous action; an LSTM (none when
  `lstm_size` is 0: a feed-forward Q-network, whose state is `()`); dueling head.

  Called as `agent((prev_actions, env_outputs), core_state, unroll=False)` like the Atari
  R2D2 network: `[B, ...]` inputs for one step, time-major `[T, B, ...]` with `unroll`;
  `env_outputs` is an `EnvOutput` or a 5-tuple in its order. The LSTM state restarts where
  `done` marks a new episode. Returns
  `(AgentOutput(greedy action <int32>, q_values), new_core_state)`.
  """

  def __init__(self, num_actions: int, mlp_sizes: Sequence[int] = (64,), lstm_size: int = 64):
    super().__init__(name='RecurrentQNetwork')
    self._num_actions = int(num_actions)
    self._mlp = networks.track_layers(self, '_mlp', [
        tf.keras.layers.Dense(size, activation='relu') for size in mlp_sizes])
    self._cells = [tf.keras.layers.LSTMCell(lstm_size)] if lstm_size else []
    if self._cells:
      self._cell = self._cells[0]  # The checkpoints' name of the LSTM.
    self._value = tf.keras.layers.Dense(1, name='value')
    self._advantage = tf.keras.layers.Dense(self._num_actions, use_bias=False,
                                            name='advantage')

  def initial_state(self, batch_size):
    return tuple((tf.zeros([batch_size, cell.units]), tf.zeros([batch_size, cell.units]))
                 for cell in self._cells)

  def _torso(self, prev_actions, env_outputs):
    observation = tf.cast(env_outputs.observation, tf.float32)
    x = tf.concat([tf.reshape(observation, [tf.shape(observation)[0], -1]),
                   env_outputs.reward[:, tf.newaxis],
                   tf.one_hot(prev_actions, self._num_actions)], axis=1)
    for layer in self._mlp:
      x = layer(x)
    return x

  def _head(self, core_output):
    advantage = self._advantage(core_output)
    advantage -= tf.reduce_mean(advantage, axis=-1, keepdims=True)
    q_values = self._value(core_output) + advantage
    return AgentOutput(tf.argmax(q_values, axis=-1, output_type=tf.int32), q_values)

  def _core(self, torso_outputs, done, core_state):
    if not self._cells:
      return torso_outputs, core_state
    return networks.unroll_recurrent(
        networks.lstm_stack_step(self._cells), torso_outputs, done, core_state,
        self.initial_state(tf.shape(done)[1]))

  def call(self, inputs, core_state, unroll=False):
    prev_actions, env_outputs = inputs
    return networks.apply_step_or_unroll(
        networks.torso_core_head(self._torso, self._core, self._head),
        prev_actions, env_outputs, core_state, unroll)

  @tf.function
  def get_action(self, *args, **kwargs):
    return self(*args, **kwargs)
