"""Tests of seed_rl.common.learner_runtime.restarts: stale rows of restarted actors."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import env_state
from seed_rl.common.learner_runtime import restarts

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


def _detect(env_run_ids, env_ids, run_ids):
  envs_needing_reset, kept_rows, kept_env_ids, (values,) = restarts.detect_restarts(
      env_run_ids, tf.constant(env_ids, tf.int32), tf.constant(run_ids, tf.int64),
      (tf.constant([float(i) for i in range(len(env_ids))]),))
  return (envs_needing_reset.numpy().tolist(), kept_rows.numpy()[:, 0].tolist(),
          kept_env_ids.numpy().tolist(), values.numpy().tolist())


def test_detect_restarts_resets_new_runs_and_drops_the_dying_and_the_repeated_rows():
  run_ids = env_state.PerEnvState(4, tf.TensorSpec([], tf.int64))
  assert _detect(run_ids, [0, 1], [5, 6]) == ([0, 1], [0, 1], [0, 1], [0., 1.])
  assert _detect(run_ids, [0, 1], [5, 6]) == ([], [0, 1], [0, 1], [0., 1.])
  # Env 0's actor died with a call in flight (run id 5) and its successor (7) joined.
  assert _detect(run_ids, [0, 0, 1], [5, 7, 6]) == ([0], [1, 2], [0, 1], [1., 2.])
  # A client repeating another's request: the repeats are dropped, the batch runs.
  assert _detect(run_ids, [1, 1, 0, 1], [6, 6, 7, 6]) == ([], [0, 2], [1, 0], [0., 2.])
  assert _detect(run_ids, [2, 2], [9, 9]) == ([2], [0], [2], [0.])


def test_two_new_runs_of_one_env_in_a_batch_keep_the_later_row_and_the_batch_runs():
  run_ids = env_state.PerEnvState(4, tf.TensorSpec([], tf.int64))
  assert _detect(run_ids, [0, 1], [5, 6]) == ([0, 1], [0, 1], [0, 1], [0., 1.])
  # Two callers with new run ids for envs 0-1 share a batch: the later rows are kept.
  assert _detect(run_ids, [0, 1, 0, 1, 2], [7, 8, 9, 10, 11]) == (
      [0, 1, 2], [2, 3, 4], [0, 1, 2], [2., 3., 4.])
  assert run_ids.read(tf.constant([0, 1, 2])).numpy().tolist() == [9, 10, 11]
  # With the dead run's row (9) and a repeat of a new one too: one row of env 0 is kept.
  assert _detect(run_ids, [0, 0, 0, 0, 1], [12, 9, 13, 12, 10]) == (
      [0], [2, 4], [0, 1], [2., 4.])
  assert run_ids.read(tf.constant([0, 1])).numpy().tolist() == [13, 10]


def test_padding_rows_are_dropped_before_any_env_state_is_read(capfd):
  run_ids = env_state.PerEnvState(2, tf.TensorSpec([], tf.int64))

  @tf.function
  def detect(env_ids, run_ids_of_rows):
    return restarts.detect_restarts(run_ids, env_ids, run_ids_of_rows,
                                    (tf.range(tf.size(env_ids)),))

  envs_needing_reset, kept_rows, kept_env_ids, (values,) = detect(
      tf.constant([1, -1, -1, -1], tf.int32), tf.constant([5, 0, 0, 0], tf.int64))
  assert (envs_needing_reset.numpy().tolist(), kept_rows.numpy()[:, 0].tolist(),
          kept_env_ids.numpy().tolist(), values.numpy().tolist()) == ([1], [0], [1], [0])
  assert run_ids.read(tf.constant([0, 1])).numpy().tolist() == [0, 5]
  assert 'Dropping' not in capfd.readouterr().err  # Padding is not news.


def test_the_usual_batch_takes_the_shortcut_to_what_the_general_path_gives():
  # The usual batch: distinct env ids with the run ids they had. The general path, run on the
  # same state, gives the same rows and resets nothing.
  run_ids = env_state.PerEnvState(4, tf.TensorSpec([], tf.int64))
  _detect(run_ids, [0, 1, 2, 3], [5, 6, 7, 8])
  env_ids, rows = tf.constant([3, 1, 0], tf.int32), tf.constant([8, 6, 5], tf.int64)
  values = (tf.constant([1., 2., 3.]),)
  shortcut = restarts.detect_restarts(run_ids, env_ids, rows, values)
  general = restarts._detect_restarts(run_ids, env_ids, rows, values, env_ids < 0,
                                      run_ids.read(env_ids))
  tf.nest.map_structure(np.testing.assert_array_equal, shortcut, general)
  assert shortcut[0].numpy().tolist() == [] and shortcut[2].numpy().tolist() == [3, 1, 0]
  assert run_ids.read(tf.range(4)).numpy().tolist() == [5, 6, 7, 8]
