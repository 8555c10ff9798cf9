"""The R2D2 Q-network for Atari: frame stacking, convolutional torso, LSTM, dueling head.

Actors send single `[84, 84, 1]` uint8 frames (any single-channel shape works); the network
stacks the last `stack_size` frames itself, keeping the previous ones in its recurrent state. This
cuts the actor -> learner traffic by `stack_size` and lets the replay buffer store each frame once.
To keep that state small, the up to 3 previous frames are bit-packed 8 bits each into one int32
per pixel, the oldest frame in the least significant bits. `stack_frames` stacks a whole
time-major sequence at once.

The agent is called like every R2D2 network (see `seed_rl.agents.r2d2.networks`, which holds
what R2D2's networks share): `agent((prev_actions, env_outputs), agent_state, unroll=False)` ->
`(AgentOutput(action, q_values), new_agent_state)`, `[B, ...]` inputs for one inference step,
time-major `[T, B, ...]` with `unroll`. Both the frame stack and the LSTM state restart where
`env_outputs.done` says a new episode starts.
`env_outputs` is an `EnvOutput` or a 5-tuple in its order (see `seed_rl.common.networks`).
"""

import collections
from collections.abc import Sequence
import math
from typing import Any

import tensorflow as tf

from seed_rl.agents.r2d2.networks import AgentOutput  # The original's name here.
from seed_rl.agents.r2d2.networks import dueling_output
from seed_rl.common import networks

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
  the shape as a tuple of ints.

  Stacking concatenates frames along their last dimension, so with `stack_size > 1` that
  dimension must be 1 (`[H, W, 1]` for Atari, but any single-channel shape works).
  """
  _check_stack_size(stack_size)
  observation_shape = tuple(int(d) for d in tf.TensorShape(observation_shape))
  if stack_size > 1 and (not observation_shape or observation_shape[-1] != 1):
    raise ValueError(
        f'Frame stacking (stack_size={stack_size}) needs single-channel observations (last '
        f'dimension 1, e.g. [84, 84, 1]), got {observation_shape}; use stack_size=1 for '
        'others.')
  return observation_shape


# The dtype of the frame stacking state (frames of up to 8 bits packed side by side).
STACKING_STATE_DTYPE = tf.int32


def initial_frame_stacking_state(stack_size: int, batch_size,
                                 observation_shape: Sequence[int]) -> Any:
  """The empty frame stack of `batch_size` rows for `stack_frames`:
  `<int32>[batch_size, prod(observation_shape)]` zeros, `()` when `stack_size == 1`."""
  if stack_size == 1:
    return ()
  return tf.zeros([batch_size, math.prod(observation_shape)], STACKING_STATE_DTYPE)


def _unroll_cell(inputs, done, start_state, zero_state,
                 recurrent_cell: networks.StepFn) -> tuple[Any, Any]:
  """Applies `recurrent_cell` at each step of time-major `inputs`, restarting where `done`.

  Args:
    inputs: `[T, B, ...]` tensor (or nested lists of numbers); T must be known statically.
    done: `<bool>[T, B]`; before step t the state of the rows with `done[t]` becomes
      `zero_state`.
    start_state: nest of `[B, ...]` tensors, the cell's state before the first step.
    zero_state: the state of a new episode, structured like `start_state`.
    recurrent_cell: `(input_t [B, ...], state) -> (output_t, new_state)`.

  Returns:
    `(outputs, state)`: the step outputs stacked to `[T, B, ...]` and the state after the
    last step.
  """
  return networks.unroll_recurrent(recurrent_cell, tf.convert_to_tensor(inputs),
                                   tf.convert_to_tensor(done), start_state, zero_state)


def _stack_one_step(frames, frame_stacking_state, stack_size: int) -> tuple[Any, Any]:
  """`stack_frames` for one step: `[B, ..., 1]` frames, no episode starts."""
  # Previous frame k (0 = oldest) sits in bits [8k, 8k + 8); list them newest first.
  previous = []
  for k in reversed(range(stack_size - 1)):
    frame = tf.bitwise.bitwise_and(
        tf.bitwise.right_shift(frame_stacking_state, _BITS_PER_FRAME * k), _FRAME_MASK)
    previous.append(tf.reshape(tf.cast(frame, frames.dtype), tf.shape(frames)))
  stacked = tf.concat([frames] + previous, axis=-1)
  current = tf.reshape(tf.cast(frames, STACKING_STATE_DTYPE), tf.shape(frame_stacking_state))
  # Drop the oldest frame (shift right) and put the current one in the newest slot.
  new_state = tf.bitwise.bitwise_or(
      tf.bitwise.right_shift(frame_stacking_state, _BITS_PER_FRAME),
      tf.bitwise.left_shift(current, _BITS_PER_FRAME * (stack_size - 2)))
  return stacked, new_state


def stack_frames(frames, frame_stacking_state, done, stack_size: int) -> tuple[Any, Any]:
  """Stacks every frame of a time-major sequence with the `stack_size - 1` frames before it.

  Args:
    frames: `[T, B, ..., 1]` frames (normally `[T, B, H, W, 1]`) with integer values in
      [0, 255], of any numeric dtype (uint8 from the actors). With `stack_size == 1` any number
      of channels is allowed and the frames are returned as is.
    frame_stacking_state: `<int32>[B, prod(...)]` (see `initial_frame_stacking_state`) holding
      the `stack_size - 1` frames before the first step, 8 bits each, the oldest in the least
      significant bits; `()` when `stack_size == 1`.
    done: `<bool>[T, B]`, true where the frame is the first of a new episode: the frames
      before it belong to another episode and are replaced by zeros.
    stack_size: number of frames to stack, 1 to 4.

  Returns:
    `(stacked, new_frame_stacking_state)`: `stacked` is `[T, B, ..., stack_size]` with the
    dtype of `frames`, channels ordered from the newest (the frame of that step) to the oldest;
    the new state holds the newest `stack_size - 1` frames for the next sequence.
  """
  _check_stack_size(stack_size)
  if stack_size == 1:
    return frames, ()
  frames = tf.convert_to_tensor(frames)
  done = tf.convert_to_tensor(done)
  frame_stacking_state = tf.convert_to_tensor(frame_stacking_state)
  if frames.shape.rank is not None and (frames.shape.rank < 3 or frames.shape[-1] != 1):
    raise ValueError(
        f'Frame stacking (stack_size={stack_size}) needs single-channel time-major frames '
        f'[T, B, ..., 1], got shape {frames.shape}.')
  if not frames.shape[:2].is_compatible_with(done.shape[:2]):
    raise ValueError(f'frames {frames.shape} and done {done.shape} must have the same first '
                     'two dimensions [T, B].')
  if frame_stacking_state.dtype != STACKING_STATE_DTYPE:
    raise ValueError(f'frame_stacking_state must be int32 (see initial_frame_stacking_state), '
                     f'got {frame_stacking_state.dtype.name}.')
  return _unroll_cell(frames, done, frame_stacking_state,
                      tf.zeros_like(frame_stacking_state),
                      lambda frames_t, state: _stack_one_step(frames_t, state, stack_size))


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
        self._stack_size, batch_size, self._observation_shape))

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
    outputs, (core_state,) = _unroll_cell(
        torso_outputs, done, (core_state,), (tf.nest.map_structure(tf.zeros_like, core_state),),
        networks.lstm_stack_step([self._core]))
    return outputs, core_state

  def _head(self, core_output) -> AgentOutput:
    """Dueling head: state value plus mean-subtracted advantages, and the greedy action."""
    return dueling_output(self._value(self._value_hidden(core_output)),
                          self._advantage(self._advantage_hidden(core_output)))

  def _unroll(self, prev_actions, env_outputs, agent_state):
    """Frame stacking, torso, LSTM and head over time-major `[T, B, ...]` inputs."""
    done = tf.convert_to_tensor(env_outputs.done)
    stacked, frame_stacking_state = stack_frames(
        env_outputs.observation, agent_state.frame_stacking_state, done, self._stack_size)
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
