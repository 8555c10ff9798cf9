"""Tests of seed_rl.common.training.tensors."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.training import tensors

pytestmark = pytest.mark.timeout(120)


def test_make_time_major_static_dynamic_uint16_and_nests():
  x = np.arange(24).reshape([2, 3, 4]).astype(np.uint16)
  result = tensors.make_time_major({'x': x, 'v': [tf.constant([1, 2])]})
  assert result['x'].dtype == tf.uint16
  np.testing.assert_array_equal(result['x'], np.swapaxes(x, 0, 1))
  np.testing.assert_array_equal(result['v'][0], [1, 2])  # Rank 1: untouched.

  @tf.function(input_signature=[tf.TensorSpec([None, 3, None], tf.float32)])
  def dynamic(t):
    out = tensors.make_time_major(t)
    assert out.shape.as_list() == [3, None, None]
    return out

  np.testing.assert_array_equal(dynamic(x.astype(np.float32)), np.swapaxes(x, 0, 1))


def test_split_structure_including_zero_prefix():
  nest = (tf.range(5), {'a': tf.reshape(tf.range(10), [5, 2])})
  prefix, suffix = tensors.split_structure(nest, 2)
  np.testing.assert_array_equal(prefix[0], [0, 1])
  np.testing.assert_array_equal(suffix[1]['a'], [[4, 5], [6, 7], [8, 9]])
  prefix, suffix = tensors.split_structure(nest, 0)
  assert prefix[0].shape == [0] and prefix[1]['a'].shape == [0, 2]
  np.testing.assert_array_equal(suffix[0], range(5))
  prefix, suffix = tensors.split_structure(nest[1], 1, axis=1)
  np.testing.assert_array_equal(prefix['a'][:, 0], range(0, 10, 2))


def test_select_rows_gives_each_leafs_boolean_mask_in_a_graph_too():
  nest = (tf.range(4), {'frames': tf.cast(tf.reshape(tf.range(24), [4, 3, 2]), tf.uint8),
                        'none': ()})
  mask = tf.constant([True, False, True, True])
  selected = tensors.select_rows(nest, mask)
  expected = tf.nest.map_structure(lambda t: tf.boolean_mask(t, mask), nest)
  tf.nest.map_structure(np.testing.assert_array_equal, selected, expected)
  assert selected[1]['frames'].dtype == tf.uint8

  @tf.function(input_signature=[tf.TensorSpec([None], tf.bool)])
  def select(mask):
    return tensors.select_rows(nest, mask)

  assert select(tf.constant([False] * 4))[1]['frames'].shape == (0, 3, 2)
  np.testing.assert_array_equal(select(tf.constant([False, True, False, False]))[0], [1])


def test_empty_rows_match_their_specs():
  empty = tensors.empty_rows((tf.TensorSpec([2, 3], tf.uint8), tf.TensorSpec([], tf.int64)))
  assert [(t.shape, t.dtype) for t in empty] == [((0, 2, 3), tf.uint8), ((0,), tf.int64)]


def test_run_if_any_runs_its_updates_only_when_there_is_anything():
  runs = tf.Variable(0)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.bool)])
  def count(ids, flags):
    tensors.run_if_any(ids, lambda: runs.assign_add(1))
    tensors.run_if_any(flags, lambda: runs.assign_add(10))

  count(tf.zeros([0], tf.int32), tf.constant([False, False]))
  assert runs.numpy() == 0
  count(tf.constant([3]), tf.constant([False, True]))
  assert runs.numpy() == 11
  tensors.run_if_any(tf.constant([7]), lambda: runs.assign_add(100))  # Eagerly too.
  assert runs.numpy() == 111
