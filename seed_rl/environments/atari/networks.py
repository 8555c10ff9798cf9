"""The R2D2 Q-network for Atari: frame stacking, convolutional torso, LSTM, dueling head.

Actors send single `[84, 84, 1]` uint8 frames; the network stacks the last `stack_size` frames
itself, keeping the previous ones in its recurrent state. This cuts the actor -> learner traffic by
`stack_size` and lets the replay buffer store each frame once. To keep that state small, the up to
3 previous frames are bit-packed 8 bits each into one int32 per pixel, the oldest frame in the
least significant bits.

The agent is called as `agent((prev_actions, env_outputs), agent_state, unroll=False)` and returns
`(AgentOutput(action, q_values), new_agent_state)`. Without `unroll` the inputs are `[B, ...]`
(one inference step); with `unroll` they are time-major `[T, B, ...]` (training). Both the frame
stack and the LSTM state restart where `env_outputs.done` says a new episode starts.
`env_outputs` is an `EnvOutput` or a 5-tuple in its order (see `seed_rl.common.networks`).
"""

import collections
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from seed_rl.common import networks

AgentOutput = collections.namedtuple('AgentOutput', 'action q_values')
AgentState = collections.namedtuple('AgentState', 'core_state frame_stacking_state')

# Previous frames live in the bits of an int32, 8 bits per frame; the current frame comes in
# separately, so 3 previous frames (24 bits) allow a stack of 4.
_BITS_PER_FRAME = 8
_FRAME_MASK = (1 << _BITS_PER_FRAME) - 1
_MAX_STACK_SIZE = 4


def _check_stack_size(stack_size: int) -> None:
  if not 1 <= stack_size <= _MAX_STACK_SIZE:
    raise ValueError(
        f'stack_size must be between 1 and {_MAX_STACK_SIZE} (previous frames are bit-packed '
        f'{_BITS_PER_FRAME} bits each into an int32), got {stack_size}.')


def check_frame_stacking(stack_size: int, observation_shape: Sequence[int]) -> tuple[int, ...]:
  """Raises ValueError unless `stack_size` frames of `observation_shape` can be stacked; returns
  the shape as a tuple of ints."""
  _check_stack_size(stack_size)
  observation_shape = tuple(int(d) for d in tf.TensorShape(observation_shape))
  if stack_size > 1 and (len(observation_shape) != 3 or observation_shape[-1] != 1):
    raise ValueError(
        f'Frame stacking (stack_size={stack_size}) needs single-channel [H, W, 1] '
        f'observations, got {observation_shape}.')
  return observation_shape


def initial_frame_stacking_state(batch_size, observation_shape: Sequence[int],
                                 stack_size: int) -> Any:
  """The empty frame stack of `batch_size` rows for `stack_frames`; `()` when `stack_size == 1`."""
  if stack_size == 1:
    return ()
  height, width = observation_shape[:2]
  return tf.zeros([batch_size, height * width], tf.int32)


def stack_frames(frames, frame_stacking_state, done, stack_size: int) -> tuple[Any, Any]:
  """Stacks the current frames with the previous ones kept in `frame_stacking_state` (one step).

  Args:
    frames: `[B, H, W, 1]` frames with integer values in [0, 255] (normally uint8). With
      `stack_size == 1` any number of channels is allowed and the frames are returned as is.
    frame_stacking_state: `<int32>[B, H*W]` holding the `stack_size - 1` previous frames,
      8 bits each, the oldest in the least significant bits; `()` when `stack_size == 1`.
    done: `<bool>[B]`, true where `frames` is the first frame of a new episode: the previous
      frames of those rows belong to another episode and are replaced by zeros.
    stack_size: number of frames to stack, 1 to 4.

  Returns:
    `(stacked, new_frame_stacking_state)`: `stacked` is `[B, H, W, stack_size]` with the dtype of
    `frames`, channels ordered from the newest (the current frame) to the oldest; the new state
    holds the newest `stack_size - 1` frames for the next step.
  """
  _check_stack_size(stack_size)
  if stack_size == 1:
    return frames, ()
  frames = tf.convert_to_tensor(frames)
  if frames.shape[-1] != 1:
    raise ValueError(
        f'Frame stacking (stack_size={stack_size}) needs single-channel frames [B, H, W, 1], '
        f'got shape {frames.shape}.')
  shape = tf.shape(frames)
  current = tf.reshape(tf.cast(frames, tf.int32), [shape[0], -1])
  state = tf.where(done[:, tf.newaxis], tf.zeros_like(frame_stacking_state),
                   frame_stacking_state)
  # Previous frame k (0 = oldest) sits in bits [8k, 8k + 8); list them newest first.
  previous = [
      tf.bitwise.bitwise_and(tf.bitwise.right_shift(state, _BITS_PER_FRAME * k), _FRAME_MASK)
      for k in reversed(range(stack_size - 1))]
  stacked = tf.stack([current] + previous, axis=-1)
  stacked = tf.reshape(stacked, tf.concat([shape[:-1], [stack_size]], axis=0))
  stacked = tf.cast(stacked, frames.dtype)
  # Drop the oldest frame (shift right) and put the current one in the newest slot.
  new_state = tf.bitwise.bitwise_or(
      tf.bitwise.right_shift(state, _BITS_PER_FRAME),
      tf.bitwise.left_shift(current, _BITS_PER_FRAME * (stack_size - 2)))
  return stacked, new_state


def stack_frames_over_time(frames, done, frame_stacking_state,
                           stack_size: int) -> tuple[Any, Any]:
  """`stack_frames` over time-major `[T, B, H, W, 1]` frames and `<bool>[T, B]` done.

  Returns `(stacked [T, B, H, W, stack_size], frame_stacking_state after the last step)`; with
  `stack_size == 1` the frames as they are and `()`.
  """
  if stack_size == 1:
    return frames, ()
  # stack_frames resets on done itself, so the initial state given to unroll_recurrent is never
  # needed by it; passing one keeps both helpers' contracts simple.
  return networks.unroll_recurrent(
      lambda step, state: stack_frames(step[0], state, step[1], stack_size),
      (frames, done), done, frame_stacking_state, tf.zeros_like(frame_stacking_state))


def nature_dqn_convs() -> list:
  """The convolutions of the Nature-DQN torso (Mnih et al. 2015), named `conv_0` to `conv_2`.

  32 filters 8x8 stride 4, 64 filters 4x4 stride 2, 64 filters 3x3 stride 1, valid padding and
  ReLU each: 84x84 frames become 7x7x64. The R2D2 network and the benchmarks' feed-forward Atari
  networks share them.
  """
  return [tf.keras.layers.Conv2D(filters, size, strides=stride, padding='valid',
                                 activation='relu', name=f'conv_{i}')
          for i, (filters, size, stride) in enumerate([(32, 8, 4), (64, 4, 2), (64, 3, 1)])]


class DuelingLSTMDQNNet(tf.keras.Model):
  """The R2D2 network (Kapturowski et al. 2019) for Atari.

  Frame stacking, the Nature-DQN convolutional torso with a 512-unit dense layer, the reward and
  the one-hot previous action appended, an LSTM of 512 units and a dueling head
  `q = v + (a - mean(a))`. The greedy action is `argmax q` (the learner adds exploration).
  """

  def __init__(self, num_actions: int, observation_shape: Sequence[int], stack_size: int = 1):
    super().__init__(name='DuelingLSTMDQNNet')
    stack_size = int(stack_size)
    observation_shape = check_frame_stacking(stack_size, observation_shape)
    self._num_actions = int(num_actions)  # Gymnasium gives numpy integers; Keras wants int.
    self._observation_shape = observation_shape
    self._stack_size = stack_size
    self._convs = networks.track_layers(self, '_conv', nature_dqn_convs())
    self._flatten = tf.keras.layers.Flatten()
    self._fc = tf.keras.layers.Dense(512, activation='relu', name='fc')
    self._core = tf.keras.layers.LSTMCell(512, name='core')
    self._value_hidden = tf.keras.layers.Dense(512, activation='relu', name='value_hidden')
    self._value = tf.keras.layers.Dense(1, name='value')
    self._advantage_hidden = tf.keras.layers.Dense(512, activation='relu',
                                                   name='advantage_hidden')
    self._advantage = tf.keras.layers.Dense(self._num_actions, use_bias=False, name='advantage')

  def initial_state(self, batch_size) -> AgentState:
    """Zero LSTM state `(h, c)` and empty frame stack (`()` without frame stacking)."""
    units = self._core.units
    core_state = (tf.zeros([batch_size, units]), tf.zeros([batch_size, units]))
    return AgentState(core_state, initial_frame_stacking_state(
        batch_size, self._observation_shape, self._stack_size))

  def _torso(self, prev_actions, env_outputs):
    """Conv stack and dense layer on `[N, H, W, stack]` frames, plus reward and previous action."""
    x = tf.cast(env_outputs.observation, tf.float32) / 255.
    for conv in self._convs:
      x = conv(x)
    x = self._fc(self._flatten(x))
    reward = tf.cast(env_outputs.reward, tf.float32)[:, tf.newaxis]
    one_hot_prev_action = tf.one_hot(prev_actions, self._num_actions)
    return tf.concat([x, reward, one_hot_prev_action], axis=1)

  def _unroll_lstm(self, torso_outputs, done, core_state):
    """The LSTM over time `[T, B, ...]`; its state `(h, c)` restarts at zeros where `done`."""
    outputs, (core_state,) = networks.unroll_recurrent(
        networks.lstm_stack_step([self._core]), torso_outputs, done, (core_state,),
        (tf.nest.map_structure(tf.zeros_like, core_state),))
    return outputs, core_state

  def _head(self, core_output) -> AgentOutput:
    """Dueling head: state value plus mean-subtracted advantages, and the greedy action."""
    value = self._value(self._value_hidden(core_output))
    advantages = self._advantage(self._advantage_hidden(core_output))
    advantages -= tf.reduce_mean(advantages, axis=-1, keepdims=True)
    q_values = value + advantages
    action = tf.argmax(q_values, axis=-1, output_type=tf.int32)
    return AgentOutput(action, q_values)

  def _unroll(self, prev_actions, env_outputs, agent_state):
    """Frame stacking, torso, LSTM and head over time-major `[T, B, ...]` inputs."""
    done = tf.convert_to_tensor(env_outputs.done)
    stacked, frame_stacking_state = stack_frames_over_time(
        env_outputs.observation, done, agent_state.frame_stacking_state, self._stack_size)
    unroll_core = networks.torso_core_head(self._torso, self._unroll_lstm, self._head)
    outputs, core_state = unroll_core(
        prev_actions, env_outputs._replace(observation=stacked, done=done),
        tuple(agent_state.core_state))
    return outputs, AgentState(core_state, frame_stacking_state)

  def call(self, input_, agent_state, unroll=False):
    """Runs the network for one step (`unroll=False`, `[B, ...]`) or `T` steps (`[T, B, ...]`)."""
    prev_actions, env_outputs = input_
    return networks.apply_step_or_unroll(self._unroll, prev_actions, env_outputs,
                                         AgentState(*agent_state), unroll)

  @tf.function
  def get_action(self, *args, **kwargs):
    return self(*args, **kwargs)
