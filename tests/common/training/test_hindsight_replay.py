"""Tests of replay.HindsightExperienceReplay: sub-windows, goal substitution and rewards."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import replay

pytestmark = pytest.mark.timeout(120)

# Same fields as learner_runtime's Unroll, without importing the learner runtime.
Unroll = collections.namedtuple('Unroll', 'agent_state prev_actions env_outputs agent_outputs')

H = 5  # Stored windows hold H + 1 steps.
NUM_ITEMS = 6
GOAL_DIM = 2


def _specs(window=H + 1, goal_dim=GOAL_DIM, observation=None):
  if observation is None:
    observation = {
        'observation': tf.TensorSpec([window, 3], tf.float32),
        'achieved_goal': tf.TensorSpec([window, goal_dim], tf.float32),
        'desired_goal': tf.TensorSpec([window, goal_dim], tf.float32),
    }
  return Unroll(
      agent_state=tf.TensorSpec([3], tf.float32),
      prev_actions=tf.TensorSpec([window], tf.int32),
      env_outputs=EnvOutput(
          reward=tf.TensorSpec([window], tf.float32),
          done=tf.TensorSpec([window], tf.bool),
          observation=observation,
          abandoned=tf.TensorSpec([window], tf.bool),
          episode_step=tf.TensorSpec([window], tf.int32)),
      agent_outputs=tf.TensorSpec([window, 2], tf.float32))


def _items(done, reward):
  """Windows where every leaf encodes (item, step); desired goals never equal achieved ones."""
  item = np.arange(NUM_ITEMS)[:, None]
  step = np.arange(H + 1)[None, :]
  code = (100 * item + step).astype(np.int32)
  achieved = np.stack(np.broadcast_arrays(item, step), -1).astype(np.float32)
  values = Unroll(
      agent_state=np.arange(NUM_ITEMS, dtype=np.float32)[:, None] * np.array([1., 2., 3.],
                                                                          np.float32),
      prev_actions=code,
      env_outputs=EnvOutput(
          reward=np.asarray(reward, np.float32),
          done=np.asarray(done, bool),
          observation={
              'observation': np.repeat(code[..., None], 3, -1).astype(np.float32),
              'achieved_goal': achieved,
              'desired_goal': -1. - achieved,
          },
          abandoned=code % 2 == 1,
          episode_step=np.broadcast_to(step, code.shape).astype(np.int32)),
      agent_outputs=np.stack([code, -code], -1).astype(np.float32))
  return tf.nest.map_structure(tf.constant, values), values


def _exact_match_reward(achieved, desired):
  """0 where the goal is reached exactly, -1 elsewhere (a sparse GoalEnv-style TF reward)."""
  return tf.cast(tf.reduce_all(tf.equal(achieved, desired), -1), tf.float32) - 1.


def _np_exact_match_reward(achieved, desired):
  return np.all(achieved == desired, -1).astype(np.float32) - 1.


def _random_done(rng):
  done = rng.random((NUM_ITEMS, H + 1)) < 0.25
  done[0] = False  # One item without episode boundaries.
  done[1, 3] = True  # And one with a boundary for sure.
  return done


def _make(unroll_length, substitution_probability, done, reward,
          compute_reward_fn=_exact_match_reward):
  buffer = replay.HindsightExperienceReplay(
      NUM_ITEMS, _specs(), 0.5, compute_reward_fn, unroll_length, substitution_probability)
  tensors, arrays = _items(done, reward)
  buffer.insert(tensors, tf.ones([NUM_ITEMS]))
  return buffer, arrays


def _positions(indices, values):
  """(item <[n, 1]>, original step <[n, unroll_length + 1]>) of each returned position."""
  return indices.numpy()[:, None], values.env_outputs.episode_step.numpy()


@pytest.mark.parametrize('unroll_length', [1, 3, H])
def test_sub_windows_are_contiguous_and_cover_all_starts(unroll_length):
  tf.random.set_seed(0)
  rng = np.random.default_rng(0)
  buffer, arrays = _make(unroll_length, 0.5, _random_done(rng), rng.normal(size=(6, H + 1)))
  indices, weights, values = buffer.sample(1500, 0.)
  item, step = _positions(indices, values)
  n = 1500
  assert weights.shape == [n]
  starts = step[:, 0]
  np.testing.assert_array_equal(step, starts[:, None] + np.arange(unroll_length + 1))
  assert set(starts.tolist()) == set(range(H - unroll_length + 1))
  # Every leaf but agent_state (and the relabelled desired goals and rewards) is the stored
  # window at the same steps.
  expected = tf.nest.map_structure(lambda x: x[item, step], arrays._replace(agent_state=()))
  got = values._replace(agent_state=())
  for leaf in ('prev_actions', 'agent_outputs'):
    np.testing.assert_array_equal(getattr(got, leaf), getattr(expected, leaf))
  for leaf in ('done', 'abandoned', 'episode_step'):
    np.testing.assert_array_equal(getattr(got.env_outputs, leaf),
                                  getattr(expected.env_outputs, leaf))
  for key in ('observation', 'achieved_goal'):
    np.testing.assert_array_equal(got.env_outputs.observation[key],
                                  expected.env_outputs.observation[key])
  for leaf in tf.nest.flatten(got):
    assert leaf.shape[:2] == [n, unroll_length + 1]
  np.testing.assert_array_equal(values.agent_state, arrays.agent_state[indices.numpy()])


def test_sample_keeps_parent_indices_and_weights():
  tf.random.set_seed(1)
  buffer, _ = _make(2, 0.5, np.zeros((NUM_ITEMS, H + 1), bool), np.zeros((6, H + 1)))
  buffer.update_priorities(tf.range(NUM_ITEMS, dtype=tf.int64),
                           tf.constant([1., 2., 3., 4., 5., 6.]))
  indices, weights, values = buffer.sample(400, 1.0)
  probs = np.arange(1., 7.) / 21.
  raw = ((1 / NUM_ITEMS) / probs[indices.numpy()])**0.5
  np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-5)
  np.testing.assert_array_equal(values.prev_actions[:, 0] // 100, indices)


def _substitutions(indices, values):
  """(substituted <bool>[n, L+1], future item, future step) from the returned desired goals."""
  item, step = _positions(indices, values)
  desired = values.env_outputs.observation['desired_goal'].numpy()
  original = -1. - np.stack(np.broadcast_arrays(item, step), -1)
  substituted = np.any(desired != original, -1)
  return substituted, desired[..., 0].astype(int), desired[..., 1].astype(int), item, step


@pytest.mark.parametrize('unroll_length', [H, 2])
def test_goals_come_from_future_steps_of_the_window_and_never_where_done(unroll_length):
  tf.random.set_seed(2)
  rng = np.random.default_rng(2)
  done = _random_done(rng)
  probability = 0.3
  buffer, _ = _make(unroll_length, probability, done, np.zeros((6, H + 1)))
  indices, _, values = buffer.sample(6000, 0.)
  substituted, future_item, future_step, item, step = _substitutions(indices, values)
  item = np.broadcast_to(item, step.shape)
  # Never where done.
  assert not np.any(substituted & done[item, step])
  # The hindsight goal is an achieved goal of the same stored window, at a step in
  # [min(t + 1, H), H]: never a past one.
  np.testing.assert_array_equal(future_item[substituted], item[substituted])
  low = np.minimum(step + 1, H)
  assert np.all(future_step[substituted] >= low[substituted])
  assert np.all(future_step[substituted] <= H)
  # Every allowed future step occurs, about uniformly.
  for t in np.unique(step):
    futures = future_step[substituted & (step == t)]
    allowed = range(min(t + 1, H), H + 1)
    assert set(futures.tolist()) == set(allowed), t
    frequency = np.bincount(futures, minlength=H + 1)[min(t + 1, H):] / len(futures)
    np.testing.assert_allclose(frequency, 1 / len(allowed), atol=0.1)
  # With the given probability where not done.
  not_done = ~done[item, step]
  assert abs(substituted[not_done].mean() - probability) < 0.02


def test_probability_one_substitutes_every_step_not_done():
  tf.random.set_seed(3)
  done = _random_done(np.random.default_rng(3))
  buffer, _ = _make(H, 1.0, done, np.zeros((6, H + 1)))
  indices, _, values = buffer.sample(300, 0.)
  substituted, _, _, item, step = _substitutions(indices, values)
  np.testing.assert_array_equal(substituted, ~done[np.broadcast_to(item, step.shape), step])


def _expected_rewards(arrays, indices, values, reward_fn):
  """The definition: stored + notdone * (R(a[t], new d[t-1]) - R(a[t], d[t-1])) for t >= 1.

  Only for the returned positions whose previous step is returned too (column >= 1).
  """
  item, step = _positions(indices, values)
  observation = values.env_outputs.observation
  achieved = observation['achieved_goal'].numpy()[:, 1:]
  new_desired = observation['desired_goal'].numpy()[:, :-1]
  old_desired = arrays.env_outputs.observation['desired_goal'][item, step[:, :-1]]
  stored = arrays.env_outputs.reward[item, step[:, 1:]]
  done = arrays.env_outputs.done[item, step[:, 1:]]
  delta = reward_fn(achieved, new_desired) - reward_fn(achieved, old_desired)
  return np.where(done, stored, stored + delta)


@pytest.mark.parametrize('unroll_length', [H, 3])
def test_rewards_follow_the_substituted_goals(unroll_length):
  tf.random.set_seed(4)
  rng = np.random.default_rng(4)
  done = _random_done(rng)
  stored = rng.normal(size=(NUM_ITEMS, H + 1)).astype(np.float32)
  buffer, arrays = _make(unroll_length, 0.5, done, stored)
  indices, _, values = buffer.sample(3000, 0.)
  item, step = _positions(indices, values)
  rewards = values.env_outputs.reward.numpy()
  np.testing.assert_allclose(
      rewards[:, 1:], _expected_rewards(arrays, indices, values, _np_exact_match_reward),
      rtol=1e-6)
  # Step 0 of a stored window keeps its stored reward (its transition is not in the window);
  # a first column at a later step got either its stored reward or a relabelled one.
  first = stored[item[:, 0], step[:, 0]]
  at_zero = step[:, 0] == 0
  np.testing.assert_array_equal(rewards[at_zero, 0], first[at_zero])
  assert np.all(np.isclose(rewards[:, 0], first) | np.isclose(rewards[:, 0], first + 1))
  # Relabelling did reach goals (reward 0 after a stored -1 difference) somewhere.
  assert np.any(rewards[:, 1:] > stored[item, step[:, 1:]] + 0.5)


def test_consistent_stored_rewards_stay_consistent_with_the_new_goals():
  """If stored reward[t] = R(a[t], d[t-1]) where not done, so is the returned one."""
  tf.random.set_seed(5)
  done = _random_done(np.random.default_rng(5))
  stored = np.where(done, 7., -1.).astype(np.float32)  # R(a, original d) = -1 everywhere.
  buffer, _ = _make(H, 0.6, done, stored)
  indices, _, values = buffer.sample(2000, 0.)
  item = indices.numpy()[:, None]
  observation = values.env_outputs.observation
  rewards = values.env_outputs.reward.numpy()
  recomputed = _np_exact_match_reward(observation['achieved_goal'].numpy()[:, 1:],
                                      observation['desired_goal'].numpy()[:, :-1])
  not_done = ~done[item, np.arange(1, H + 1)]
  np.testing.assert_array_equal(rewards[:, 1:][not_done], recomputed[not_done])
  np.testing.assert_array_equal(rewards[:, 1:][~not_done], 7.)
  np.testing.assert_array_equal(rewards[:, 0], stored[item[:, 0], 0])
  assert set(np.unique(recomputed[not_done]).tolist()) == {-1., 0.}


def test_zero_probability_returns_stored_goals_and_rewards():
  tf.random.set_seed(6)
  rng = np.random.default_rng(6)
  stored = rng.normal(size=(NUM_ITEMS, H + 1)).astype(np.float32)
  buffer, arrays = _make(2, 0., _random_done(rng), stored)
  indices, _, values = buffer.sample(500, 0.)
  item, step = _positions(indices, values)
  np.testing.assert_array_equal(values.env_outputs.reward, stored[item, step])
  np.testing.assert_array_equal(values.env_outputs.observation['desired_goal'],
                                arrays.env_outputs.observation['desired_goal'][item, step])


def test_numpy_goal_env_reward_through_numpy_reward_fn():
  """A GoalEnv-style numpy compute_reward(achieved, desired, info), distance-thresholded."""
  calls = []

  def compute_reward(achieved, desired, info):
    del info
    calls.append(achieved.shape)
    return -(np.linalg.norm(achieved - desired, axis=-1) > 0.5).astype(np.float64)

  reward_fn = replay.numpy_reward_fn(lambda a, d: compute_reward(a, d, {}))
  tf.random.set_seed(7)
  rng = np.random.default_rng(7)
  stored = rng.normal(size=(NUM_ITEMS, H + 1)).astype(np.float32)
  buffer, arrays = _make(3, 0.5, _random_done(rng), stored, compute_reward_fn=reward_fn)
  indices, _, values = buffer.sample(800, 0.)
  assert values.env_outputs.reward.dtype == tf.float32
  np.testing.assert_allclose(
      values.env_outputs.reward.numpy()[:, 1:],
      _expected_rewards(arrays, indices, values, lambda a, d: compute_reward(a, d, {})),
      rtol=1e-6)
  assert calls and calls[0] == (2 * 800, H, GOAL_DIM)  # One batched call per sample.


def test_sample_inside_tf_function_has_static_shapes():
  tf.random.set_seed(8)
  buffer, _ = _make(2, 0.5, np.zeros((NUM_ITEMS, H + 1), bool), np.zeros((6, H + 1)))

  @tf.function
  def sample():
    _, _, values = buffer.sample(16, 0.)
    for leaf in tf.nest.flatten(values._replace(agent_state=())):
      assert leaf.shape[:2] == [16, 3], leaf.shape
    assert values.agent_state.shape == [16, 3]
    return values

  values = sample()
  item = values.prev_actions.numpy()[:, :1] // 100
  np.testing.assert_array_equal(values.agent_state, item * np.array([1., 2., 3.]))


# Items with no agent_state, as the original's HER stores.
EnvOutputsOnly = collections.namedtuple('EnvOutputsOnly', 'env_outputs')


def _distance_reward(achieved, desired):
  return tf.norm(tf.cast(achieved - desired, tf.float32), axis=-1)


def _np_distance_reward(achieved, desired):
  return np.linalg.norm((achieved - desired).astype(np.float32), axis=-1)


def test_specs_given_as_tensors_and_items_without_agent_state():
  """As the original's HER: an example item's tensors serve as specs (their shapes and dtypes),
  and items need no agent_state; sampling relabels and cuts windows as with Unrolls."""
  tf.random.set_seed(9)
  rng = np.random.default_rng(9)
  done = _random_done(rng)
  item = np.arange(NUM_ITEMS)[:, None]
  step = np.broadcast_to(np.arange(H + 1)[None, :], (NUM_ITEMS, H + 1))
  achieved = np.stack([10 * item + step, step], -1).astype(np.int32)
  arrays = EnvOutputsOnly(EnvOutput(
      reward=rng.normal(size=(NUM_ITEMS, H + 1)).astype(np.float32), done=done,
      observation={'achieved_goal': achieved, 'desired_goal': achieved + 1000},
      abandoned=np.zeros_like(done), episode_step=step.astype(np.int32)))
  example_item = tf.nest.map_structure(lambda x: tf.constant(x[0]), arrays)
  buffer = replay.HindsightExperienceReplay(
      size=NUM_ITEMS, specs=example_item, importance_sampling_exponent=1.,
      compute_reward_fn=_distance_reward, unroll_length=3, substitution_probability=0.5)
  buffer.insert(tf.nest.map_structure(tf.constant, arrays), tf.ones([NUM_ITEMS]))

  indices, weights, values = buffer.sample(2000, 1.)
  assert isinstance(values, EnvOutputsOnly) and weights.shape == [2000]
  goals = values.env_outputs.observation
  assert goals['achieved_goal'].shape == goals['desired_goal'].shape == [2000, 4, 2]
  assert goals['desired_goal'].dtype == tf.int32 and values.env_outputs.reward.shape == [2000, 4]
  item, step = _positions(indices, values)
  np.testing.assert_array_equal(step, step[:, :1] + np.arange(4))
  np.testing.assert_array_equal(goals['achieved_goal'], achieved[item, step])
  substituted = np.any(goals['desired_goal'].numpy() != achieved[item, step] + 1000, -1)
  assert substituted.any() and not np.any(substituted & done[item, step])
  np.testing.assert_allclose(values.env_outputs.reward.numpy()[:, 1:],
                             _expected_rewards(arrays, indices, values, _np_distance_reward),
                             rtol=1e-5)


@pytest.mark.parametrize('kwargs, message', [
    ({'specs': _specs()._replace(agent_outputs='float32')}, 'TensorSpecs, or tensors'),
    ({'unroll_length': H + 1}, 'unroll_length'),
    ({'unroll_length': 0}, 'unroll_length'),
    ({'substitution_probability': 1.5}, 'substitution_probability'),
    ({'substitution_probability': -0.1}, 'substitution_probability'),
    ({'compute_reward_fn': None}, 'callable'),
    ({'specs': _specs(window=1)}, 'H >= 1'),
    ({'specs': _specs(observation=tf.TensorSpec([H + 1, 3], tf.float32))}, 'GoalEnv'),
    ({'specs': _specs(observation={
        'observation': tf.TensorSpec([H + 1, 3], tf.float32),
        'desired_goal': tf.TensorSpec([H + 1, GOAL_DIM], tf.float32)})}, 'achieved_goal'),
    ({'specs': _specs(observation={
        'achieved_goal': tf.TensorSpec([H + 1, 2], tf.float32),
        'desired_goal': tf.TensorSpec([H + 1, 3], tf.float32)})}, 'same shape'),
    ({'specs': _specs()._replace(agent_outputs=tf.TensorSpec([H, 2], tf.float32))},
     'leading window'),
    ({'specs': (tf.TensorSpec([H + 1]),)}, 'Unroll'),
    ({'size': 0}, 'size'),
])
def test_bad_arguments_raise(kwargs, message):
  arguments = {'size': 4, 'specs': _specs(), 'importance_sampling_exponent': 0.5,
               'compute_reward_fn': _exact_match_reward, 'unroll_length': 2,
               'substitution_probability': 0.5}
  arguments.update(kwargs)
  with pytest.raises(ValueError, match=message):
    replay.HindsightExperienceReplay(**arguments)
