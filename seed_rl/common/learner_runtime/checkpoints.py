"""Checkpoints (periodic, final, on SIGTERM, `init_checkpoint`) and the exported policy.

A checkpoint in the logdir is the learner's memory across restarts: a learner that finds one
resumes from it. Every checkpoint also exports the policy as a SavedModel (`saved_model/` in the
logdir) that runs without the learner.

Nothing is lost on the way: a checkpoint is deleted (beyond `checkpoints_to_keep`) only once a
newer one was written and read back whole; a learner whose logdir holds checkpoints none of which
can be restored stops and names them, unless `fresh_start` says to move them aside and start
over; and a save whose variables are not all finite is refused, so that the last good checkpoint
and SavedModel stay.
"""

import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf

from seed_rl.common import specs as specs_lib
from seed_rl.common.learner_runtime import checkpoint_files
from seed_rl.common.training import update_gate

# Seconds after a refused or failed save before the next try (or the period, when shorter).
_RETRY_SECS = 60.
# Seconds between two error lines about saves refused for non-finite variables.
_NON_FINITE_LINE_PERIOD_SECS = 300.
# Names of non-finite variables an error line shows.
_NAMES_SHOWN = 3


class UnreadableCheckpointsError(ValueError):
  """The logdir holds checkpoint files and none of them can be restored."""


def _unreadable_message(found: checkpoint_files.Found, reasons: List[str]) -> str:
  what = [found.state_error] if found.state_error else []
  what += reasons[:1] or ['no checkpoint it lists exists']
  if len(reasons) > 1:
    what.append(f'{len(reasons) - 1} earlier one(s) cannot be restored either')
  return (f'No checkpoint in the logdir can be restored: {"; ".join(what)}. Files: '
          f'{checkpoint_files.describe(found.files)}. To start from scratch pass --fresh_start '
          '(they are then moved into the logdir\'s unreadable_checkpoints_<time>/ folder, not '
          'deleted), or move them out of the logdir yourself.')


def _restore_latest(checkpoint: tf.train.Checkpoint,
                    found: checkpoint_files.Found) -> Tuple[Optional[str], List[str]]:
  """Restores the first of `found.candidates` that reads back whole and fits `checkpoint`.

  Returns its path (None if none) and one line per checkpoint that could not be restored.
  Each is verified before it is restored, so a truncated file changes no variable.
  """
  reasons = []
  for path in found.candidates:
    try:
      checkpoint_files.verify(path)
      checkpoint.restore(path).assert_consumed()
    except Exception as e:  # pylint: disable=broad-except  (a corrupt file raises many kinds)
      reasons.append(f'{path}: {checkpoint_files.first_line(e)}')
      logging.warning('Checkpoint %s cannot be restored (%s); %s.', path,
                      checkpoint_files.first_line(e),
                      'trying an earlier one' if path != found.candidates[-1] else
                      'there is no earlier one')
      continue
    logging.info('Restoring checkpoint %s', path)
    return path, reasons
  return None, reasons


def _named_variables(roots: Dict[str, Any]) -> List[Tuple[str, Any]]:
  """The variables reachable from `roots` (what a checkpoint or SavedModel of them holds), each
  once, named by its path from its root as in a checkpoint's keys (breadth first)."""
  seen, named = set(), []
  frontier = list(roots.items())
  while frontier:
    path, obj = frontier.pop(0)
    for name, child in tf.train.TrackableView(obj).children(obj).items():
      if id(child) in seen:
        continue
      seen.add(id(child))
      child_path = f'{path}/{name}'
      if isinstance(child, (tf.Variable, tf.keras.Variable)):
        named.append((child_path, child))
      else:
        frontier.append((child_path, child))
  return named


def _non_finite_check(roots: Dict[str, Any]) -> Callable[[], List[str]]:
  """A function returning the names of the floating-point variables under `roots` that hold
  a NaN or an infinity; one `tf.function` checks them all."""
  named = [(name, variable) for name, variable in _named_variables(roots)
           if tf.as_dtype(variable.dtype).is_floating]
  if not named:
    return lambda: []

  @tf.function(autograph=False)
  def all_finite():
    return tf.stack([tf.reduce_all(tf.math.is_finite(tf.convert_to_tensor(variable)))
                     for _, variable in named])

  def non_finite_names():
    return [name for (name, _), finite in zip(named, all_finite().numpy()) if not finite]

  return non_finite_names


class PolicyExport(tf.Module):
  """The policy for one step, without the learner: what the learner exports as a SavedModel.

  `get_action(prev_actions, env_outputs, core_state)` returns `(agent_outputs, new_core_state)`
  for `[B, ...]` inputs (the action first), `get_greedy_action` the same acting with the mode
  of the action distribution, and `initial_state(batch_size)` the state of a new episode; load
  with `tf.saved_model.load(logdir + '/saved_model')`.
  """

  def __init__(self, network: tf.Module, policy: Callable, greedy_policy: Callable,
               initial_state: Callable, specs: Any):
    super().__init__(name='exported_agent')
    self.network = network
    self.agent_variables = list(network.variables)
    input_signature = [specs_lib.leading_dim_specs(specs.action, None),
                       specs_lib.leading_dim_specs(specs.env_output, None),
                       specs_lib.leading_dim_specs(specs.agent_state, None)]
    self.get_action = tf.function(policy, input_signature=input_signature)
    self.get_greedy_action = tf.function(greedy_policy, input_signature=input_signature)
    self.initial_state = tf.function(initial_state,
                                     input_signature=[tf.TensorSpec([], tf.int32)])

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    # The Keras model itself is not exported (Keras 3 would trace its own signatures); its
    # variables are, through `agent_variables` and the functions that capture them.
    children = super()._trackable_children(save_type, **kwargs)
    children.pop('network', None)
    return children


class Checkpointer(object):
  """Restores at start, then saves the checkpoint and the exported policy on request or when
  `period_secs` passed since the last save (at once after a fresh start).

  `config` gives `logdir`, `init_checkpoint` (used only when the logdir holds no checkpoint),
  `checkpoints_to_keep`, `save_checkpoint_secs` and `fresh_start` (read only when the logdir
  holds checkpoints none of which can be restored: without it the constructor raises
  `UnreadableCheckpointsError`, with it they are moved aside).
  """

  def __init__(self, trackables: Dict[str, Any], export: PolicyExport, iterations: tf.Variable,
               config: Any):
    self._checkpoint = tf.train.Checkpoint(**trackables)
    self._logdir = config.logdir
    self._keep = config.checkpoints_to_keep
    self._export = export
    self._iterations = iterations
    self._export_dir = os.path.join(config.logdir, 'saved_model')
    self._period_secs = config.save_checkpoint_secs
    self._checkpoint_roots = trackables
    self._roots = dict(trackables, saved_model=export)
    self._non_finite_names = None  # Built at the first save, when every variable exists.
    # Saves refused because a variable was not finite: in the learner's progress line.
    self._refused_saves = update_gate.RefusedUpdates('checkpoint saves')
    self._next_non_finite_line = 0.  # When such a refusal may be logged again.
    self._latest = self._restore(config)
    self._next_save = time.time() + self._period_secs if self._latest else 0.

  def _restore(self, config: Any) -> Optional[str]:
    """Restores the latest checkpoint of the logdir that can be restored and returns its path;
    else moves unreadable ones aside (`fresh_start`) or raises, and loads `init_checkpoint`."""
    found = checkpoint_files.find(config.logdir)
    if found.state_error:
      logging.warning('%s; looking for checkpoints by their files instead.',
                      found.state_error[0].upper() + found.state_error[1:])
    initial_values = [(variable, variable.numpy()) for _, variable in
                      _named_variables(self._checkpoint_roots)] if found.files else []
    restored, reasons = _restore_latest(self._checkpoint, found)
    self._kept = found.kept  # What the rotation deletes from, oldest first.
    if restored:
      return restored
    if found.files:
      if not config.fresh_start:
        raise UnreadableCheckpointsError(_unreadable_message(found, reasons))
      for variable, value in initial_values:  # Undo what a failed restore assigned.
        variable.assign(value)
      moved_to = checkpoint_files.move_aside(config.logdir, found.files)
      logging.warning('--fresh_start: starting from scratch; the checkpoint files that could not '
                      'be restored are moved into %s.', moved_to)
      self._kept = []
    if config.init_checkpoint:
      logging.info('Loading initial checkpoint from %s...', config.init_checkpoint)
      self._checkpoint.restore(config.init_checkpoint).assert_consumed()
    return None

  @property
  def refused_saves(self) -> int:
    """How many saves were refused because a variable was not finite."""
    return int(self._refused_saves.count.numpy())

  @property
  def latest_checkpoint(self) -> Optional[str]:
    """The path of the latest checkpoint in the logdir (restored or saved), or None."""
    return self._latest

  def _write(self, prefix: str) -> None:
    """Writes the checkpoint's files under `prefix`."""
    self._checkpoint.write(prefix)

  def save(self) -> Optional[str]:
    """Saves a checkpoint and exports the policy; returns the checkpoint's path.

    Returns None, and keeps every earlier checkpoint, when a variable is not finite or the
    save fails (both logged as errors); the next `maybe_save` then tries again within a minute.
    """
    iteration = int(self._iterations.numpy())
    self._next_save = time.time() + min(self._period_secs, _RETRY_SECS)
    if self._non_finite_names is None:
      self._non_finite_names = _non_finite_check(self._roots)
    non_finite = self._non_finite_names()
    if non_finite:
      self._refused_saves.add(True)
      if time.monotonic() >= self._next_non_finite_line:
        self._next_non_finite_line = time.monotonic() + _NON_FINITE_LINE_PERIOD_SECS
        more = len(non_finite) - _NAMES_SHOWN
        logging.error('Not saving the checkpoint of iteration %d: %s%s %s not finite (%d saves '
                      'refused so far); the last good checkpoint (%s) and SavedModel are kept.',
                      iteration, ', '.join(non_finite[:_NAMES_SHOWN]),
                      f' and {more} more' if more > 0 else '',
                      'is' if len(non_finite) == 1 else 'are', self.refused_saves,
                      self.latest_checkpoint)
      return None
    logging.info('Saving checkpoint and SavedModel at iteration %d', iteration)
    path = checkpoint_files.prefix(self._logdir, iteration)
    try:
      self._save_checkpoint(path)
    except Exception as e:  # pylint: disable=broad-except  (a full disk raises many kinds)
      logging.error('Cannot save checkpoint %s (%s); the earlier checkpoints are kept (latest: '
                    '%s). Free space on the disk or make the logdir writable.', path,
                    checkpoint_files.first_line(e), self.latest_checkpoint)
      return None
    if self.export_policy():
      self._next_save = time.time() + self._period_secs
    return path

  def export_policy(self) -> bool:
    """Exports the policy as it is now to `saved_model/`; False (logged) when that fails, the
    SavedModel there then stays the one of an earlier checkpoint."""
    try:
      self._export_policy()
    except Exception as e:  # pylint: disable=broad-except
      logging.error('Cannot export the policy to %s (%s); the SavedModel there is the one of an '
                    'earlier checkpoint. Free space on the disk or make the logdir writable.',
                    self._export_dir, checkpoint_files.first_line(e))
      return False
    return True

  def _save_checkpoint(self, path: str) -> None:
    """Writes, verifies and installs checkpoint `path`, then rotates the older ones."""
    written = checkpoint_files.being_written(self._logdir)
    checkpoint_files.remove(written)  # What an earlier save cut short left.
    self._checkpoint.save_counter.assign_add(1)
    try:
      self._write(written)
      checkpoint_files.verify(written)
    except Exception:
      checkpoint_files.remove(written)
      raise
    checkpoint_files.install(written, path)
    kept = [prefix for prefix in self._kept if prefix != path] + [path]
    checkpoint_files.write_state(self._logdir, kept[-self._keep:])
    for prefix in kept[:-self._keep]:
      checkpoint_files.remove(prefix)
    self._kept, self._latest = kept[-self._keep:], path

  def _export_policy(self) -> None:
    """Exports the policy next to the old SavedModel, then puts it in its place."""
    new_dir, old_dir = self._export_dir + '_being_written', self._export_dir + '_previous'
    for directory in (new_dir, old_dir):
      if tf.io.gfile.isdir(directory):
        tf.io.gfile.rmtree(directory)
    tf.saved_model.save(self._export, new_dir)
    if tf.io.gfile.isdir(self._export_dir):
      tf.io.gfile.rename(self._export_dir, old_dir)
    tf.io.gfile.rename(new_dir, self._export_dir)
    if tf.io.gfile.isdir(old_dir):
      tf.io.gfile.rmtree(old_dir)

  def maybe_save(self) -> None:
    if time.time() >= self._next_save:
      self.save()
