"""Tests of utils.PrioritizedReplay: ring insertion, sampling law and importance weights."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import utils

pytestmark = pytest.mark.timeout(120)

Item = collections.namedtuple('Item', 'x y')
SPECS = Item(tf.TensorSpec([], tf.int32), [tf.TensorSpec([2], tf.float32)])


def _items(values):
  values = np.asarray(values, np.int32)
  return Item(tf.constant(values), [tf.constant(np.stack([values, -values], 1), tf.float32)])


def test_insert_returns_ring_indices():
  replay = utils.PrioritizedReplay(4, SPECS, 0.5)
  assert replay.insert(_items([10, 11, 12]), tf.ones([3])).numpy().tolist() == [0, 1, 2]
  assert replay.insert(_items([13, 14, 15]), tf.ones([3])).numpy().tolist() == [3, 0, 1]
  assert replay.num_inserted.numpy() == 6
  # Every sample comes from the 4 slots, which hold 14, 15, 12, 13 now.
  _, _, values = replay.sample(200, 0.5)
  assert set(values.x.numpy().tolist()) == {12, 13, 14, 15}


def test_sampled_values_match_indices_in_nests():
  replay = utils.PrioritizedReplay(8, SPECS, 0.5)
  replay.insert(_items([5, 6, 7]), tf.constant([1., 2., 3.]))
  indices, weights, values = replay.sample(50, 0.5)
  assert isinstance(values, Item)
  expected = np.array([5, 6, 7])[indices.numpy()]
  np.testing.assert_array_equal(values.x, expected)
  np.testing.assert_array_equal(values.y[0], np.stack([expected, -expected], 1))
  assert weights.shape == [50] and np.all(weights.numpy() <= 1.0)


def test_zero_priority_exponent_samples_uniformly_with_unit_weights():
  tf.random.set_seed(1)
  replay = utils.PrioritizedReplay(10, SPECS, 0.5)
  replay.insert(_items(range(4)), tf.constant([100., 1., 1., 1.]))
  indices, weights, _ = replay.sample(4000, 0.)
  np.testing.assert_array_equal(weights, np.ones(4000))
  counts = np.bincount(indices.numpy(), minlength=4)
  assert counts.shape == (4,)  # Only the inserted slots.
  np.testing.assert_allclose(counts / 4000, 0.25, atol=0.04)


@pytest.mark.parametrize('alpha', [1.0, 0.5])
def test_sampling_frequency_matches_priority_share(alpha):
  tf.random.set_seed(2)
  priorities = np.array([1., 2., 3., 4., 10.], np.float32)
  replay = utils.PrioritizedReplay(5, SPECS, 0.5)
  replay.insert(_items(range(5)), priorities)
  indices, _, _ = replay.sample(20000, alpha)
  frequency = np.bincount(indices.numpy(), minlength=5) / 20000
  share = priorities**alpha / np.sum(priorities**alpha)
  np.testing.assert_allclose(frequency, share, rtol=0.1)


@pytest.mark.parametrize('alpha, beta', [(1.0, 1.0), (0.7, 0.3)])
def test_importance_weights_match_closed_form(alpha, beta):
  priorities = np.array([0.5, 1., 2., 8.], np.float32)
  replay = utils.PrioritizedReplay(6, SPECS, beta)
  replay.insert(_items(range(4)), priorities)
  indices, weights, _ = replay.sample(64, alpha)
  probs = priorities**alpha / np.sum(priorities**alpha)
  raw = ((1 / 4) / probs[indices.numpy()])**beta  # N = 4 items inserted, not the size 6.
  np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-5)


def test_update_priorities_changes_what_is_sampled():
  tf.random.set_seed(3)
  replay = utils.PrioritizedReplay(4, SPECS, 0.5)
  indices = replay.insert(_items(range(4)), tf.ones([4]))
  replay.update_priorities(indices[2:3], tf.constant([100.]))
  sampled, _, _ = replay.sample(1000, 1.0)
  assert np.mean(sampled.numpy() == 2) > 0.9


def test_sampling_an_empty_buffer_is_a_clear_error():
  replay = utils.PrioritizedReplay(4, SPECS, 0.5)
  for exponent in (0., 0.9):
    with pytest.raises(tf.errors.InvalidArgumentError, match='empty replay buffer'):
      replay.sample(2, exponent)


def test_all_zero_priorities_is_a_clear_error():
  replay = utils.PrioritizedReplay(4, SPECS, 0.5)
  replay.insert(_items([1]), tf.zeros([1]))
  with pytest.raises(tf.errors.InvalidArgumentError, match='priorities .* are zero'):
    replay.sample(2, 0.9)


def test_size_must_be_positive():
  with pytest.raises(ValueError, match='size'):
    utils.PrioritizedReplay(0, SPECS, 0.5)
