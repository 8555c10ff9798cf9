"""Checkpoints (periodic, final, on SIGTERM, `init_checkpoint`) and the exported policy.

A checkpoint in the logdir is the learner's memory across restarts: a learner that finds one
resumes from it. Every checkpoint also exports the policy as a SavedModel (`saved_model/` in the
logdir) that runs without the learner.
"""

import os
import time
from typing import Any, Callable, Dict, Optional, Tuple

from absl import logging
import tensorflow as tf

from seed_rl.common import specs as specs_lib


def _first_line(error: Exception) -> str:
  text = getattr(error, 'message', None) or str(error) or type(error).__name__
  return text.strip().splitlines()[0]


def restore_checkpoint(checkpoint: tf.train.Checkpoint, logdir: str,
                       init_checkpoint: Optional[str] = None, checkpoints_to_keep: int = 1
                       ) -> Tuple[tf.train.CheckpointManager, bool]:
  """Restores the latest checkpoint in `logdir` that can be read, else `init_checkpoint`.

  A checkpoint that cannot be restored (a truncated or missing file: a disk that filled up, a
  copy cut short) is reported in one line and the previous one is tried. Returns the manager
  (`checkpoints_to_keep` checkpoints kept, plus one every 6 hours) and whether a checkpoint of
  `logdir` was restored (the learner then resumes rather than starts).
  """
  manager = tf.train.CheckpointManager(checkpoint, logdir, max_to_keep=checkpoints_to_keep,
                                       keep_checkpoint_every_n_hours=6)
  for path in reversed(manager.checkpoints):
    try:
      checkpoint.restore(path).assert_consumed()
    except Exception as e:  # pylint: disable=broad-except  (a corrupt file raises many kinds)
      logging.warning('Checkpoint %s cannot be restored (%s); trying an earlier one.', path,
                      _first_line(e))
      continue
    logging.info('Restoring checkpoint %s', path)
    return manager, True
  if init_checkpoint:
    logging.info('Loading initial checkpoint from %s...', init_checkpoint)
    checkpoint.restore(init_checkpoint).assert_consumed()
  return manager, False


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
  `period_secs` passed since the last save (at once after a fresh start)."""

  def __init__(self, trackables: Dict[str, Any], export: PolicyExport, iterations: tf.Variable,
               config: Any):
    self._checkpoint = tf.train.Checkpoint(**trackables)
    self._manager, resumed = restore_checkpoint(self._checkpoint, config.logdir,
                                                config.init_checkpoint,
                                                config.checkpoints_to_keep)
    self._export = export
    self._iterations = iterations
    self._export_dir = os.path.join(config.logdir, 'saved_model')
    self._period_secs = config.save_checkpoint_secs
    self._last_save = time.time() if resumed else 0.

  @property
  def latest_checkpoint(self) -> Optional[str]:
    """The path of the latest checkpoint in the logdir (restored or saved), or None."""
    return self._manager.latest_checkpoint

  def save(self) -> str:
    """Saves a checkpoint and exports the policy; returns the checkpoint's path."""
    iteration = int(self._iterations.numpy())
    logging.info('Saving checkpoint and SavedModel at iteration %d', iteration)
    path = self._manager.save(checkpoint_number=iteration)
    tf.saved_model.save(self._export, self._export_dir)
    self._last_save = time.time()
    return path

  def maybe_save(self) -> None:
    if time.time() - self._last_save >= self._period_secs:
      self.save()
