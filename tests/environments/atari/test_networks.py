"""Tests of the Atari R2D2 network: frame stacking, unrolling, dueling head, checkpoints."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import utils
from seed_rl.environments.atari import networks

# The smallest frame the three valid-padding convolutions accept (36 -> 8 -> 3 -> 1) keeps the
# tests fast; the layer sizes (512 units) are the real ones.
OBSERVATION_SHAPE = (36, 36, 1)
NUM_ACTIONS = 5


def _env_outputs(observation, done, reward):
  done = tf.constant(done)
  return utils.EnvOutput(
      reward=tf.constant(reward, tf.float32), done=done,
      observation=tf.constant(observation, tf.uint8),
      abandoned=tf.zeros_like(done), episode_step=tf.zeros(done.shape, tf.int32))


def _random_inputs(rng, leading_shape, done=None):
  """`(prev_actions, env_outputs)` with random frames, rewards and actions."""
  leading_shape = list(leading_shape)
  observation = rng.randint(0, 256, size=leading_shape + list(OBSERVATION_SHAPE))
  reward = rng.uniform(-3, 3, size=leading_shape)
  if done is None:
    done = np.zeros(leading_shape, bool)
  prev_actions = tf.constant(rng.randint(0, NUM_ACTIONS, size=leading_shape), tf.int32)
  return prev_actions, _env_outputs(observation.astype(np.uint8), done, reward)


def _built_net(stack_size=4, batch_size=2):
  net = networks.DuelingLSTMDQNNet(NUM_ACTIONS, OBSERVATION_SHAPE, stack_size)
  inputs = _random_inputs(np.random.RandomState(0), [batch_size])
  net(inputs, net.initial_state(batch_size))
  return net


def _stack(frame_sequence, done_sequence, stack_size):
  """Runs `stack_frames` on `[B, H, W, 1]` frames one step (`T = 1`) at a time; returns the
  `[B, H, W, stack_size]` stacks."""
  batch_size, height, width, _ = frame_sequence[0].shape
  state = networks.initial_frame_stacking_state(stack_size, batch_size, (height, width, 1))
  stacks = []
  for frames, done in zip(frame_sequence, done_sequence):
    stacked, state = networks.stack_frames(
        tf.constant(frames)[tf.newaxis], state, tf.constant(done)[tf.newaxis], stack_size)
    stacks.append(stacked.numpy()[0])
    if stack_size > 1:
      assert state.dtype == tf.int32 and state.shape == [batch_size, height * width]
  return stacks


def _frame(value):
  """A `[1, 2, 2, 1]` uint8 frame with four distinct pixel values derived from `value`."""
  return (np.array([value, value + 1, value + 2, value + 3]) % 256).astype(
      np.uint8).reshape([1, 2, 2, 1])


def _expected_stack(frames, stack_size):
  """The `[1, 2, 2, stack_size]` stack of `frames` (newest first), padded with zero frames."""
  frames = list(frames) + [np.zeros_like(_frame(0))] * (stack_size - len(frames))
  return np.concatenate(frames, axis=-1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('stack_size,channels', [(1, 1), (4, 4)])
def test_torso_input_channels_follow_the_stack_size(stack_size, channels):
  net = _built_net(stack_size)
  assert net._convs[0].kernel.shape == (8, 8, channels, 32)
  state = net.initial_state(3)
  if stack_size == 1:
    assert state.frame_stacking_state == ()
  else:
    assert state.frame_stacking_state.shape == [3, 36 * 36]
    assert state.frame_stacking_state.dtype == tf.int32
  assert [t.shape.as_list() for t in state.core_state] == [[3, 512], [3, 512]]


@pytest.mark.timeout(30)
@pytest.mark.parametrize('stack_size', [2, 3, 4])
def test_stack_frames_sequence_and_reset_on_done(stack_size):
  a, b, c, d, e, f = [_frame(v) for v in (0, 252, 40, 128, 77, 200)]  # 252..255 included.
  stacks = _stack([a, b, c, d, e, f], [[True], [False], [False], [False], [True], [False]],
                  stack_size)
  history = [[a], [b, a], [c, b, a], [d, c, b, a], [e], [f, e]]
  for stacked, frames in zip(stacks, history):
    assert stacked.dtype == np.uint8
    np.testing.assert_array_equal(stacked, _expected_stack(frames[:stack_size], stack_size))


@pytest.mark.timeout(30)
def test_stack_frames_explicit_stack_4_values():
  frames = [np.full([1, 1, 1, 1], v, np.uint8) for v in (10, 20, 30, 40, 50, 60)]
  stacks = _stack(frames, [[False], [False], [False], [False], [True], [False]], 4)
  assert [s.reshape(-1).tolist() for s in stacks] == [
      [10, 0, 0, 0], [20, 10, 0, 0], [30, 20, 10, 0], [40, 30, 20, 10],
      [50, 0, 0, 0], [60, 50, 0, 0]]


@pytest.mark.timeout(30)
def test_stack_frames_rows_are_independent():
  frames = [np.array([v, v + 100], np.uint8).reshape([2, 1, 1, 1]) for v in (1, 2, 3)]
  stacks = _stack(frames, [[False, False], [False, True], [False, False]], 3)
  assert stacks[-1][:, 0, 0, :].tolist() == [[3, 2, 1], [103, 102, 0]]


@pytest.mark.timeout(30)
def test_stack_frames_round_trips_every_byte_value():
  all_bytes = np.arange(256, dtype=np.uint8).reshape([1, 16, 16, 1])
  sequence = [all_bytes, 255 - all_bytes, np.roll(all_bytes, 7), all_bytes[:, ::-1],
              np.full_like(all_bytes, 255)]
  stacks = _stack(sequence, [[False]] * len(sequence), 4)
  np.testing.assert_array_equal(stacks[-1], np.concatenate(sequence[:0:-1], axis=-1))
  np.testing.assert_array_equal(stacks[3], np.concatenate(sequence[3::-1], axis=-1))


@pytest.mark.timeout(30)
def test_stack_size_one_passes_frames_through():
  frames = tf.constant(np.arange(12, dtype=np.uint8).reshape([1, 1, 2, 2, 3]))
  stacked, state = networks.stack_frames(frames, (), tf.constant([[True]]), 1)
  assert state == ()
  np.testing.assert_array_equal(stacked, frames)


@pytest.mark.timeout(60)
def test_unroll_equals_step_by_step_with_done_in_the_middle():
  net = _built_net(stack_size=4)
  rng = np.random.RandomState(1)
  # Start from a state that is not the initial one: frames and LSTM state of a running episode.
  state = net.initial_state(2)
  for _ in range(2):
    _, state = net(_random_inputs(rng, [2]), state)
  done = np.array([[False, False], [False, True], [True, False], [False, False],
                   [False, False], [False, True]])
  prev_actions, env_outputs = _random_inputs(rng, [6, 2], done)
  unrolled, unrolled_state = net((prev_actions, env_outputs), state, unroll=True)
  assert unrolled.q_values.shape == [6, 2, NUM_ACTIONS] and unrolled.action.shape == [6, 2]
  for t in range(6):
    step_inputs = tf.nest.map_structure(lambda x, t=t: x[t], (prev_actions, env_outputs))
    step, state = net(step_inputs, state)
    np.testing.assert_allclose(step.q_values, unrolled.q_values[t], atol=1e-5)
  np.testing.assert_array_equal(state.frame_stacking_state, unrolled_state.frame_stacking_state)
  for step_t, unrolled_t in zip(state.core_state, unrolled_state.core_state):
    np.testing.assert_allclose(step_t, unrolled_t, atol=1e-5)


@pytest.mark.timeout(60)
def test_done_resets_frames_and_lstm():
  """A step with done gives the same output whatever the state before it was."""
  net = _built_net(stack_size=4)
  rng = np.random.RandomState(2)
  state = net.initial_state(1)
  for _ in range(3):
    _, state = net(_random_inputs(rng, [1]), state)
  inputs = _random_inputs(rng, [1], done=[True])
  after_history, _ = net(inputs, state)
  from_scratch, _ = net(inputs, net.initial_state(1))
  np.testing.assert_allclose(after_history.q_values, from_scratch.q_values, atol=1e-6)


@pytest.mark.timeout(60)
def test_dueling_head_and_greedy_action():
  net = _built_net(stack_size=1, batch_size=4)
  inputs = _random_inputs(np.random.RandomState(3), [4])
  outputs, new_state = net(inputs, net.initial_state(4))
  core_output = new_state.core_state[0]  # The LSTM output is its new h.
  value = net._value(net._value_hidden(core_output))
  advantages = net._advantage(net._advantage_hidden(core_output))
  expected = value + advantages - tf.reduce_mean(advantages, axis=-1, keepdims=True)
  np.testing.assert_allclose(outputs.q_values, expected, atol=1e-5)
  np.testing.assert_allclose(tf.reduce_mean(outputs.q_values, axis=-1), value[:, 0], atol=1e-5)
  assert outputs.action.dtype == tf.int32
  np.testing.assert_array_equal(outputs.action, np.argmax(outputs.q_values, axis=-1))


@pytest.mark.timeout(30)
@pytest.mark.parametrize('stack_size', [0, 5])
def test_unsupported_stack_sizes_raise(stack_size):
  with pytest.raises(ValueError, match='stack_size'):
    networks.DuelingLSTMDQNNet(NUM_ACTIONS, OBSERVATION_SHAPE, stack_size)
  with pytest.raises(ValueError, match='stack_size'):
    networks.stack_frames(tf.zeros([1, 1, 2, 2, 1], tf.uint8), tf.zeros([1, 4], tf.int32),
                          tf.constant([[False]]), stack_size)


@pytest.mark.timeout(30)
def test_frame_stacking_needs_single_channel_frames():
  with pytest.raises(ValueError, match='single-channel'):
    networks.DuelingLSTMDQNNet(NUM_ACTIONS, (36, 36, 3), stack_size=4)
  networks.DuelingLSTMDQNNet(NUM_ACTIONS, (36, 36, 3), stack_size=1)  # No stacking: fine.


@pytest.mark.timeout(60)
def test_checkpoint_round_trip(tmp_path):
  net = _built_net(stack_size=4)
  inputs = _random_inputs(np.random.RandomState(4), [2])
  state = net.initial_state(2)
  expected, _ = net(inputs, state)
  checkpoint = tf.train.Checkpoint(agent=net)
  path = checkpoint.save(str(tmp_path / 'ckpt'))
  saved = [name for name, _ in tf.train.list_variables(path) if name.startswith('agent/')]
  assert len(saved) == len(net.trainable_variables) == 18
  for variable in net.trainable_variables:
    variable.assign(variable + tf.random.normal(variable.shape, stddev=0.1))
  perturbed, _ = net(inputs, state)
  assert not np.allclose(perturbed.q_values, expected.q_values)
  tf.train.Checkpoint(agent=net).restore(path).assert_consumed()
  restored, _ = net(inputs, state)
  np.testing.assert_array_equal(restored.q_values, expected.q_values)


@pytest.mark.timeout(60)
def test_number_of_trainable_variables():
  # Convs 3 x (kernel, bias), fc 2, LSTM 3, value 2 + 2, advantage 2 + 1 (no bias).
  assert len(_built_net(stack_size=1).trainable_variables) == 18


@pytest.mark.timeout(60)
def test_get_action_returns_plain_structures():
  net = _built_net(stack_size=4)
  inputs = _random_inputs(np.random.RandomState(5), [2])
  state = net.initial_state(2)
  eager_outputs, eager_state = net(inputs, state)
  outputs, new_state = net.get_action(inputs, state)
  assert type(outputs) is networks.AgentOutput and type(new_state) is networks.AgentState
  assert type(new_state.core_state) is tuple
  np.testing.assert_allclose(outputs.q_values, eager_outputs.q_values, atol=1e-5)
  np.testing.assert_array_equal(new_state.frame_stacking_state,
                                eager_state.frame_stacking_state)


def _numpy_stacks(frames, done, stack_size):
  """Reference stacking of time-major `[T, B, ..., 1]` frames from an empty history: channel k
  of step t is the frame of step t - k when that step is in the same episode, else zeros."""
  stacks = np.zeros(frames.shape[:-1] + (stack_size,), frames.dtype)
  for b in range(done.shape[1]):
    episode_start = 0
    for t in range(done.shape[0]):
      if done[t, b]:
        episode_start = t
      for k in range(min(stack_size, t - episode_start + 1)):
        stacks[t, b, ..., k] = frames[t - k, b, ..., 0]
  return stacks


@pytest.mark.timeout(60)
@pytest.mark.parametrize('stack_size', [2, 3, 4])
def test_stack_frames_over_a_sequence_matches_a_numpy_reference(stack_size):
  """One call stacks a whole `[T, B, H, W, 1]` sequence; the state it returns continues it."""
  rng = np.random.RandomState(stack_size)
  history = rng.randint(0, 256, size=[11, 3, 3, 2, 1]).astype(np.uint8)
  history[2, 1] = 255  # The largest byte survives the bit-packing.
  done = rng.uniform(size=[11, 3]) < 0.2
  done[6, 2] = True
  expected = _numpy_stacks(history, done, stack_size)
  state = networks.initial_frame_stacking_state(stack_size, 3, (3, 2, 1))
  first, state = networks.stack_frames(history[:4], state, done[:4], stack_size)
  rest, _ = networks.stack_frames(tf.constant(history[4:]), state, tf.constant(done[4:]),
                                  stack_size)
  assert first.shape == [4, 3, 3, 2, stack_size] and first.dtype == tf.uint8
  np.testing.assert_array_equal(first, expected[:4])
  np.testing.assert_array_equal(rest, expected[4:])
  whole, _ = networks.stack_frames(history, networks.initial_frame_stacking_state(
      stack_size, 3, (3, 2, 1)), done, stack_size)
  np.testing.assert_array_equal(whole, expected)


@pytest.mark.timeout(60)
def test_stack_frames_of_float_vectors_in_a_tf_function():
  """`[T, B, 1]` float frames (an observation shape of `[1]`) keep their dtype; 4 frames,
  newest first, restart at `done` (the values worked out by hand)."""
  stack = tf.function(networks.stack_frames)
  state = networks.DuelingLSTMDQNNet(2, [1], stack_size=4).initial_state(1).frame_stacking_state
  output, state = stack(tf.constant([[[1.]]]), state, tf.constant([[False]]), 4)
  assert output.dtype == tf.float32
  assert output.numpy().tolist() == [[[1, 0, 0, 0]]]
  output, _ = stack(tf.constant([[[v]] for v in (2., 3., 4., 5., 6.)]), state,
                    tf.constant([[False], [False], [False], [True], [False]]), 4)
  assert output.numpy()[:, 0].tolist() == [
      [2, 1, 0, 0], [3, 2, 1, 0], [4, 3, 2, 1], [5, 0, 0, 0], [6, 5, 0, 0]]


@pytest.mark.timeout(30)
def test_unroll_cell_applies_the_cell_over_time_and_restarts_where_done():
  """`_unroll_cell(inputs, done, start_state, zero_state, recurrent_cell)`: a running sum per
  row, restarted at `zero_state` where `done`, checked against numpy."""
  inputs = np.arange(1, 13, dtype=np.float32).reshape([6, 2, 1])
  done = np.array([[False, False], [True, False], [False, False], [False, True],
                   [False, False], [True, True]])
  start = np.array([[100.], [200.]], np.float32)

  def running_sum(input_t, state):
    (total,) = state
    total = total + input_t
    return total * 2, (total,)

  outputs, (final,) = networks._unroll_cell(
      inputs=inputs.tolist(), done=done.tolist(), start_state=(tf.constant(start),),
      zero_state=(tf.zeros([2, 1]),), recurrent_cell=running_sum)
  expected, total = [], start.copy()
  for t in range(6):
    total = np.where(done[t][:, np.newaxis], 0., total) + inputs[t]
    expected.append(total * 2)
  assert outputs.shape == [6, 2, 1]
  np.testing.assert_allclose(outputs, np.stack(expected))
  np.testing.assert_allclose(final, total)


@pytest.mark.timeout(60)
def test_frame_stacking_of_single_channel_observations_of_any_shape():
  """Stacking needs only a last dimension of 1: the state has one int32 per element."""
  for shape, size in [([1], 1), ((6, 1), 6), ((5, 7, 1), 35)]:
    state = networks.DuelingLSTMDQNNet(2, shape, stack_size=4).initial_state(3)
    assert state.frame_stacking_state.shape == [3, size]
    assert state.frame_stacking_state.dtype == tf.int32
  net = networks.DuelingLSTMDQNNet(NUM_ACTIONS, (36, 44, 1), stack_size=3)
  done = np.zeros([4, 2], bool)
  prev_actions = tf.zeros([4, 2], tf.int32)
  observation = np.random.RandomState(6).randint(0, 256, size=[4, 2, 36, 44, 1])
  outputs, state = net((prev_actions, _env_outputs(observation, done, np.zeros([4, 2]))),
                       net.initial_state(2), unroll=True)
  assert outputs.q_values.shape == [4, 2, NUM_ACTIONS]
  assert net._convs[0].kernel.shape == (8, 8, 3, 32)
  assert state.frame_stacking_state.shape == [2, 36 * 44]


@pytest.mark.timeout(30)
def test_stack_frames_refuses_mismatched_inputs():
  frames = tf.zeros([3, 2, 4, 1], tf.uint8)
  state = tf.zeros([2, 4], tf.int32)
  with pytest.raises(ValueError, match=r'first two dimensions \[T, B\]'):
    networks.stack_frames(frames, state, tf.zeros([3, 5], tf.bool), 2)
  with pytest.raises(ValueError, match='must be int32'):
    networks.stack_frames(frames, tf.zeros([2, 4], tf.int64), tf.zeros([3, 2], tf.bool), 2)
  with pytest.raises(ValueError, match=r'single-channel time-major frames \[T, B, \.\.\., 1\]'):
    networks.stack_frames(tf.zeros([3, 2, 4, 3], tf.uint8), state, tf.zeros([3, 2], tf.bool), 2)
