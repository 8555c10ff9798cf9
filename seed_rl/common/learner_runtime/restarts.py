"""Actor restarts as the learner sees them: new run ids, and stale rows of dead actors.

An actor draws a new run id for each of its environments whenever it (re)starts; the learner
compares it with the last one it saw to know when an environment's state must start afresh.
"""

import tensorflow as tf

from seed_rl.common.learner_runtime import env_state
from seed_rl.common.training import tensors


@tf.autograph.experimental.do_not_convert
def detect_restarts(env_run_ids: env_state.PerEnvState, env_ids, run_ids, batch):
  """Finds the environments whose actor (re)started, and drops the rows no env state may see.

  A new run id for an environment means a new actor process: the caller resets that
  environment's learner-side state. Rows are dropped (they get action 0 and touch no state)
  rather than failing the batch for every caller in it:
  - padding rows: a negative env id (the learner pads a starved batch with them; the server
    refuses such ids from clients);
  - repeats of an earlier row's (env id, run id) (a client repeating an actor's request);
  - rows of an env id carrying a new run id when a later row of the batch carries another new
    run id for it: the later one arrived later, from a later (re)start, and is kept;
  - a dead actor's last call sharing the batch with its successor's first call (the row with
    the env's previous run id, see `get_non_dying_envs`).
  Call inside the inference tf.function; it records the new run ids.

  Args:
    env_run_ids: per-environment run ids (int64).
    env_ids, run_ids: `[N]` of the inference batch.
    batch: nest of the other `[N, ...]` inputs.

  Returns:
    `(envs_needing_reset, kept_rows <int64>[M, 1], env_ids, batch)`, the last two without the
    dropped rows.
  """
  env_ids = tf.convert_to_tensor(env_ids)
  padding = env_ids < 0
  previous_run_ids = env_run_ids.read(tf.where(padding, tf.zeros_like(env_ids), env_ids))
  # The usual batch, every row an env id of its own with the run id it had, keeps every row and
  # changes nothing; the other cases take the ops that sort them out.
  usual = tf.logical_and(
      tf.logical_and(tf.logical_not(tf.reduce_any(padding)),
                     tf.reduce_all(tf.equal(previous_run_ids, run_ids))),
      tf.equal(tf.size(tf.unique(env_ids)[0]), tf.size(env_ids)))

  def unchanged():
    return (tf.zeros([0], env_ids.dtype), tf.where(tf.ones_like(padding)), env_ids, batch)

  def sort_out():
    return _detect_restarts(env_run_ids, env_ids, run_ids, batch, padding, previous_run_ids)

  return tf.cond(usual, unchanged, sort_out)


@tf.autograph.experimental.do_not_convert
def _detect_restarts(env_run_ids: env_state.PerEnvState, env_ids, run_ids, batch, padding,
                     previous_run_ids):
  """`detect_restarts` of a batch with padding, repeated env ids or new run ids."""
  first = _first_of_repeated_rows(env_ids, run_ids, padding)
  new_run = tf.logical_and(tf.not_equal(previous_run_ids, run_ids), first)
  superseded = _superseded_new_runs(env_ids, new_run)
  reset_mask = tf.logical_and(new_run, tf.logical_not(superseded))
  candidates = tf.logical_and(first, tf.logical_not(superseded))
  envs_needing_reset = tensors.select_rows(env_ids, reset_mask)
  kept_candidates, _ = get_non_dying_envs(
      envs_needing_reset, *tensors.select_rows((reset_mask, env_ids), candidates))
  kept_mask = tf.cast(tf.scatter_nd(tf.where(candidates), tf.cast(kept_candidates, tf.int32),
                                    tf.shape(env_ids, tf.int64)), tf.bool)
  kept_env_ids, run_ids, batch = tensors.select_rows((env_ids, run_ids, batch), kept_mask)
  _print_if_any('Environment ids needing reset:', env_ids, reset_mask)
  env_run_ids.replace(kept_env_ids, run_ids)
  return envs_needing_reset, tf.where(kept_mask), kept_env_ids, batch


@tf.autograph.experimental.do_not_convert
def _first_of_repeated_rows(env_ids, run_ids, padding):
  """`<bool>[N]`: False for a padding row and for a row whose (env id, run id) an earlier row of
  the batch has.

  Two callers sending the same request (a client repeating an actor's) end up in one batch;
  the repeats are dropped (action 0) instead of failing the batch for every caller in it.
  """
  pairs = tf.stack([tf.cast(env_ids, tf.int64), run_ids], axis=1)
  _, pair_index = tf.raw_ops.UniqueV2(x=pairs, axis=[0])
  positions = tf.range(tf.size(env_ids))
  first_position = tf.math.unsorted_segment_min(positions, pair_index, tf.size(env_ids))
  first = tf.equal(tf.gather(first_position, pair_index), positions)
  _print_if_any('Dropping repeated rows of environment ids:', env_ids,
                tf.logical_not(first | padding))
  return tf.logical_and(first, tf.logical_not(padding))


@tf.autograph.experimental.do_not_convert
def _superseded_new_runs(env_ids, new_run):
  """`<bool>[N]`: True for a row carrying a new run id for an env id when a later row of the
  batch carries another new run id for it (`new_run`: the rows carrying a new run id, at most
  one per (env id, run id))."""
  _, env_index = tf.unique(env_ids)
  positions = tf.range(tf.size(env_ids))
  last_new_position = tf.math.unsorted_segment_max(
      tf.where(new_run, positions, -1), env_index, tf.size(env_ids))
  superseded = tf.logical_and(new_run, tf.gather(last_new_position, env_index) > positions)
  _print_if_any('Dropping rows of environment ids that a later row of the batch restarts with '
                'another new run id:', env_ids, superseded)
  return superseded


@tf.autograph.experimental.do_not_convert
def get_non_dying_envs(envs_needing_reset, reset_mask, env_ids):
  """Drops the stale last transition of a restarted actor from an inference batch.

  When an actor dies with a call in flight and its replacement (same env ids, new run ids)
  joins the same batch, the old call's rows are "dying": their env id needs a reset but the
  row itself carries the old run id.

  Args:
    envs_needing_reset: `<int32>[k]` env ids whose run id changed in this batch.
    reset_mask: `<bool>[N]`, True for the rows carrying a new run id.
    env_ids: `<int32>[N]` env id of every row.

  Returns:
    `(nondying_mask <bool>[N], nondying_env_ids)`. Raises InvalidArgumentError if an env id
    still appears twice afterwards.
  """
  env_ids = tf.convert_to_tensor(env_ids)
  needs_reset = tf.reduce_any(
      env_ids[:, tf.newaxis] == tf.cast(envs_needing_reset, env_ids.dtype)[tf.newaxis, :],
      axis=1)
  dying = tf.logical_and(needs_reset, tf.logical_not(reset_mask))
  _print_if_any('Dropping dying transitions of environment ids:', env_ids, dying)
  nondying_mask = tf.logical_not(dying)
  nondying_env_ids = tensors.select_rows(env_ids, nondying_mask)
  with tf.control_dependencies([env_state.assert_unique_ids(
      nondying_env_ids, 'Environment ids appear more than once in one inference batch '
      'after removing dying transitions (an actor restarted twice within one batch?)')]):
    return tf.identity(nondying_mask), tf.identity(nondying_env_ids)


@tf.autograph.experimental.do_not_convert
def scatter_rows(kept_rows, values, batch_size: int):
  """Puts the rows computed for the kept rows back into a full batch (zeros elsewhere)."""
  shape = tf.concat([[batch_size], tf.shape(values, tf.int64)[1:]], 0)
  return tf.scatter_nd(kept_rows, values, shape)


def _print_if_any(message: str, values, mask) -> None:
  """Prints the rows of `values` that `mask` selects after `message` when there are any, in a
  graph as eagerly (selected only then)."""
  tensors.run_if_any(mask, lambda: tf.print(message, tensors.select_rows(values, mask)))
