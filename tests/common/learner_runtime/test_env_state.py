"""Tests of seed_rl.common.learner_runtime.env_state: the unroll store and per-environment state."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import env_state

pytestmark = pytest.mark.timeout(120)


def _append(store, env_ids, values):
  completed, unrolls = store.append(tf.constant(env_ids, tf.int32), values)
  return completed.numpy().tolist(), tf.nest.map_structure(lambda t: t.numpy(), unrolls)


def test_unroll_store_rejects_duplicate_env_ids():
  store = env_state.UnrollStore(3, 2, tf.TensorSpec([], tf.int32))
  with pytest.raises(tf.errors.InvalidArgumentError, match='Duplicate environment ids'):
    store.append(tf.constant([0, 0], tf.int32), tf.constant([1, 2], tf.int32))


def test_unroll_store_emits_exact_sequences_sharing_the_bootstrap_step():
  store = env_state.UnrollStore(num_envs=2, unroll_length=3, timestep_specs=tf.TensorSpec([], tf.int32))
  assert store.unroll_specs.shape == [4]
  for step in range(10, 13):
    completed, unrolls = _append(store, [0], tf.constant([step]))
    assert completed == []
    assert unrolls.shape == (0, 4)
  completed, unrolls = _append(store, [0, 1], tf.constant([13, 100]))
  assert completed == [0]
  np.testing.assert_array_equal(unrolls, [[10, 11, 12, 13]])
  for step in range(14, 17):
    completed, unrolls = _append(store, [0], tf.constant([step]))
  assert completed == [0]
  np.testing.assert_array_equal(unrolls, [[13, 14, 15, 16]])

  # A reset (actor restart) drops env 1's partial unroll: it starts over without the shared step.
  store.reset(tf.constant([1]))
  for step in range(200, 203):
    completed, unrolls = _append(store, [1], tf.constant([step]))
    assert completed == []
  completed, unrolls = _append(store, [1], tf.constant([203]))
  assert completed == [1]
  np.testing.assert_array_equal(unrolls, [[200, 201, 202, 203]])


def test_unroll_store_completes_several_envs_in_one_call():
  store = env_state.UnrollStore(3, 1, tf.TensorSpec([], tf.float32))
  _append(store, [2, 0, 1], tf.constant([1., 2., 3.]))
  completed, unrolls = _append(store, [1, 2], tf.constant([4., 5.]))
  assert completed == [1, 2]
  np.testing.assert_array_equal(unrolls, [[3., 4.], [1., 5.]])


def test_unroll_store_with_overlap_repeats_burn_in_steps():
  store = env_state.UnrollStore(1, unroll_length=2, timestep_specs=tf.TensorSpec([], tf.int32),
                            num_overlapping_steps=2)
  outputs = []
  for step in range(10, 17):
    completed, unrolls = _append(store, [0], tf.constant([step]))
    if completed:
      outputs.append(unrolls[0].tolist())
  assert outputs == [[0, 0, 10, 11, 12], [10, 11, 12, 13, 14], [12, 13, 14, 15, 16]]

  store.reset(tf.constant([0]))
  for step in range(20, 23):
    completed, unrolls = _append(store, [0], tf.constant([step]))
  assert unrolls[0].tolist() == [0, 0, 20, 21, 22]


def test_unroll_store_with_nested_specs():
  Step = collections.namedtuple('Step', 'a b')
  specs = Step(tf.TensorSpec([2], tf.float32), [tf.TensorSpec([], tf.bool)])
  store = env_state.UnrollStore(2, 1, specs)
  assert store.unroll_specs.a.shape == [2, 2]
  _append(store, [0], Step(tf.constant([[1., 2.]]), [tf.constant([True])]))
  completed, unrolls = _append(store, [0], Step(tf.constant([[3., 4.]]), [tf.constant([False])]))
  assert completed == [0]
  assert isinstance(unrolls, Step)
  np.testing.assert_array_equal(unrolls.a, [[[1., 2.], [3., 4.]]])
  np.testing.assert_array_equal(unrolls.b[0], [[True, False]])


def _starts_next(store, env_id):
  return bool(store.starts_next_unroll(tf.constant([env_id]))[0])


def test_unroll_store_reports_the_first_step_of_the_next_unroll():
  # unroll_length 3, overlap 1: rows of 5 steps; the next unroll starts at row position 3.
  store = env_state.UnrollStore(1, 3, tf.TensorSpec([], tf.int32), num_overlapping_steps=1)
  starts, unrolls = [], []
  for step in range(10, 20):
    starts.append(_starts_next(store, 0))
    completed, unroll = _append(store, [0], tf.constant([step]))
    if completed:
      unrolls.append(unroll[0].tolist())
  assert unrolls == [[0, 10, 11, 12, 13], [12, 13, 14, 15, 16], [15, 16, 17, 18, 19]]
  # The flagged steps are exactly the first steps of the following unrolls: 12, 15, 18.
  assert [step for step, start in zip(range(10, 20), starts) if start] == [12, 15, 18]


def test_unroll_store_next_unroll_start_without_overlap_is_the_completing_step():
  store = env_state.UnrollStore(1, 2, tf.TensorSpec([], tf.int32))
  starts = []
  for step in range(6):
    starts.append(_starts_next(store, 0))
    _append(store, [0], tf.constant([step]))
  assert starts == [False, False, True, False, True, False]


def test_aggregator_add_read_reset_replace():
  agg = env_state.PerEnvState(4, (tf.TensorSpec([], tf.int64), tf.TensorSpec([2], tf.float32)))
  ids = tf.constant([1, 3])
  agg.add(ids, (tf.constant([5, 7], tf.int64), tf.constant([[1., 2.], [3., 4.]])))
  agg.add(ids, (2, 1.))  # Broadcast over envs and dims.
  state = agg.read(tf.constant([0, 1, 3]))
  # Plain tuples, not tf.Module's wrappers (Keras 3 layers reject those as arguments).
  assert type(state) is tuple  # pylint: disable=unidiomatic-typecheck
  counts, vectors = state
  np.testing.assert_array_equal(counts, [0, 7, 9])
  np.testing.assert_array_equal(vectors, [[0., 0.], [2., 3.], [4., 5.]])
  agg.reset(tf.constant([3]))
  counts, vectors = agg.read(tf.constant([1, 3]))
  np.testing.assert_array_equal(counts, [7, 0])
  agg.replace(tf.constant([0]), (tf.constant([11], tf.int64), tf.constant([[9., 9.]])))
  counts, vectors = agg.read(tf.constant([0]))
  assert counts.numpy().tolist() == [11]
  with pytest.raises(tf.errors.InvalidArgumentError, match='Duplicate environment ids in PerEnvState agg_test'):
    agg.replace(tf.constant([2, 2]), (tf.constant([1, 1], tf.int64), tf.zeros([2, 2])),
                debug_op_name='agg_test')
