"""R2D2's Q-networks and what every R2D2 network shares: the output and the dueling head.

Every R2D2 agent is a Keras model called as `agent((prev_actions, env_outputs), agent_state,
unroll=False)`, returning `(AgentOutput(action, q_values), new_agent_state)`: `[B, ...]` inputs
for one inference step, time-major `[T, B, ...]` with `unroll` (training). The action is the
greedy one; the learner adds the exploration. Environment-specific networks (Atari's
`DuelingLSTMDQNNet`, with its frame stacking and convolutions) live with their environment and
use the pieces here.
"""

import collections
from typing import Sequence

import tensorflow as tf

from seed_rl.common import networks

AgentOutput = collections.namedtuple('AgentOutput', 'action q_values')


def dueling_output(value: tf.Tensor, advantages: tf.Tensor) -> AgentOutput:
  """The dueling head (Wang et al. 2016): `q = value + advantages - mean(advantages)`, and
  the greedy action `argmax q` (int32).

  Args:
    value: `[N, 1]` state values.
    advantages: `[N, num_actions]` action advantages.
  """
  q_values = value + advantages - tf.reduce_mean(advantages, axis=-1, keepdims=True)
  return AgentOutput(tf.argmax(q_values, axis=-1, output_type=tf.int32), q_values)


class RecurrentQNetwork(tf.keras.Model):
  """MLP torso on the observation, reward and one-hot previous action; an LSTM (none when
  `lstm_size` is 0: a feed-forward Q-network, whose state is `()`); dueling head.

  The generic R2D2 network for vector observations (Gymnasium classic control). Called like
  every R2D2 network (see the module docstring); `env_outputs` is an `EnvOutput` or a 5-tuple
  in its order. The LSTM state restarts where `done` marks a new episode.
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
    return dueling_output(self._value(core_output), self._advantage(core_output))

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
