"""Tests of seed_rl.common.restarts: stale rows of restarted actors."""

import pytest
import tensorflow as tf

from seed_rl.common import restarts

pytestmark = pytest.mark.timeout(120)


def _non_dying(envs_needing_reset, reset_mask, env_ids):
  mask, ids = restarts.get_non_dying_envs(
      tf.constant(envs_needing_reset, tf.int32), tf.constant(reset_mask),
      tf.constant(env_ids, tf.int32))
  return mask.numpy().tolist(), ids.numpy().tolist()


def test_non_dying_envs_without_resets_keeps_everything():
  assert _non_dying([], [False, False, False], [0, 1, 2]) == (
      [True, True, True], [0, 1, 2])


def test_non_dying_envs_with_reset_only_keeps_everything():
  assert _non_dying([1], [False, True, False], [0, 1, 2]) == ([True, True, True], [0, 1, 2])


def test_non_dying_envs_filters_the_stale_transition_of_a_restarted_env():
  # Env 1 appears twice: the dying actor's last call (old run id) and the new actor's call.
  assert _non_dying([1], [False, False, True, False], [0, 1, 1, 2]) == (
      [True, False, True, True], [0, 1, 2])


def test_non_dying_envs_rejects_an_env_repeated_without_reset():
  with pytest.raises(tf.errors.InvalidArgumentError, match='more than once'):
    _non_dying([], [False, False, False], [0, 0, 1])


def test_non_dying_envs_rejects_two_new_transitions_of_one_env():
  with pytest.raises(tf.errors.InvalidArgumentError, match='more than once'):
    _non_dying([0, 0], [True, True], [0, 0])
