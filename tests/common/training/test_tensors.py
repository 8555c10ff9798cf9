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
