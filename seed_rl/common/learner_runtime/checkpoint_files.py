"""The checkpoint files of a logdir: finding, verifying, installing, rotating, moving aside.

Checkpoint `ckpt-N` (N: the training iteration) is the files `ckpt-N.index` and
`ckpt-N.data-*` in the logdir; the `checkpoint` state file lists the kept ones, newest last, as
TensorFlow's `tf.train.latest_checkpoint` reads it. A new checkpoint is written under a
temporary name (`ckpt_being_written`), read back whole and only then renamed into place, so a
save cut short (a full disk, a preemption) never leaves a `ckpt-N` that looks whole and never
overwrites a good one. Files are only deleted by the rotation of verified checkpoints; files
that cannot be used are moved aside, never deleted. Paths go through `tf.io.gfile`, so a logdir
may be on Cloud Storage.
"""

import os
import re
import time
from typing import List, NamedTuple

import tensorflow as tf

STATE_FILE = 'checkpoint'
_PREFIX = 'ckpt-'
# Where a checkpoint is written before it is verified and renamed to `ckpt-N`.
_BEING_WRITTEN = 'ckpt_being_written'
_FILE_OF_PREFIX = re.compile(r'^(ckpt-\d+)\.(index|data-\d+-of-\d+)$')
# Most file names an error message lists before it counts the rest.
_NAMES_SHOWN = 6


def first_line(error: Exception) -> str:
  """The first line of an error's message (TensorFlow's run over many lines)."""
  text = getattr(error, 'message', None) or str(error) or type(error).__name__
  return text.strip().splitlines()[0]


def describe(paths: List[str]) -> str:
  """`paths` by name for a message: the directory once, at most a few names, then a count."""
  if not paths:
    return 'none'
  names = [os.path.basename(path) for path in paths]
  shown = ', '.join(names[:_NAMES_SHOWN])
  more = len(names) - _NAMES_SHOWN
  return (f'{shown}{f" and {more} more" if more > 0 else ""} in '
          f'{os.path.dirname(paths[0])}')


class Found(NamedTuple):
  """What a logdir holds.

  Attributes:
    candidates: checkpoint prefixes to try, best first: the state file's, newest first, then
      the others found by their files, highest iteration first.
    kept: the prefixes the rotation manages, oldest first: those in the logdir of the state
      file's list, or every checkpoint found by its files when the state file cannot be read.
    files: every checkpoint file and the state file: what must not be lost.
    state_error: why the state file cannot be read ('' when it can or is absent).
  """
  candidates: List[str]
  kept: List[str]
  files: List[str]
  state_error: str


def _number(prefix: str) -> int:
  return int(os.path.basename(prefix)[len(_PREFIX):])


def find(logdir: str) -> Found:
  """Lists the checkpoints of `logdir` by its state file and by their files."""
  files = sorted(path for path in tf.io.gfile.glob(os.path.join(logdir, _PREFIX + '*'))
                 if _FILE_OF_PREFIX.match(os.path.basename(path)))
  by_files = sorted({os.path.join(logdir, _FILE_OF_PREFIX.match(os.path.basename(path))[1])
                     for path in files}, key=_number)
  state_path = os.path.join(logdir, STATE_FILE)
  listed, state_error = [], ''
  if tf.io.gfile.exists(state_path):
    files.append(state_path)
    try:
      state = tf.train.get_checkpoint_state(logdir)
    except Exception as e:  # pylint: disable=broad-except  (bytes that are not text, ...)
      state, state_error = None, first_line(e)
    if state is None:
      state_error = state_error or 'not a checkpoint state'
    else:
      listed = [path for path in state.all_model_checkpoint_paths
                if path != state.model_checkpoint_path] + [state.model_checkpoint_path]
  if state_error:
    state_error = f'the checkpoint state file {state_path} cannot be read ({state_error})'
  candidates = listed[::-1] + [path for path in reversed(by_files) if path not in listed]
  # Only checkpoints of this logdir rotate (a state file copied with a logdir may name others).
  kept = [path for path in (by_files if state_error else listed)
          if os.path.dirname(path) == os.path.dirname(prefix(logdir, 0))]
  return Found(candidates, kept, files, state_error)


def prefix(logdir: str, iteration: int) -> str:
  """The prefix of the checkpoint of `iteration` in `logdir`."""
  return os.path.join(logdir, f'{_PREFIX}{iteration}')


def being_written(logdir: str) -> str:
  """The prefix a new checkpoint of `logdir` is written under, before it is verified."""
  return os.path.join(logdir, _BEING_WRITTEN)


def _files_of(checkpoint_prefix: str) -> List[str]:
  """The data files of a checkpoint, then its index."""
  return (tf.io.gfile.glob(checkpoint_prefix + '.data-*') +
          tf.io.gfile.glob(checkpoint_prefix + '.index'))


def verify(checkpoint_prefix: str) -> None:
  """Reads every tensor of a checkpoint back; raises when one cannot be read (a missing or
  truncated file)."""
  reader = tf.train.load_checkpoint(checkpoint_prefix)
  names = reader.get_variable_to_shape_map()
  if not names:
    raise ValueError(f'checkpoint {checkpoint_prefix} holds no tensors')
  for name in names:
    reader.get_tensor(name)


def install(written: str, checkpoint_prefix: str) -> None:
  """Renames the verified checkpoint `written` to `checkpoint_prefix`: data files first, the
  index last, so that the index appears only when the whole checkpoint is in place."""
  for path in _files_of(written):
    tf.io.gfile.rename(path, checkpoint_prefix + path[len(written):], overwrite=True)


def remove(checkpoint_prefix: str) -> None:
  """Deletes a checkpoint's files (the index first) and what a cut-short write left of it."""
  for path in reversed(_files_of(checkpoint_prefix)):
    tf.io.gfile.remove(path)
  if tf.io.gfile.isdir(checkpoint_prefix + '_temp'):
    tf.io.gfile.rmtree(checkpoint_prefix + '_temp')


def write_state(logdir: str, kept: List[str]) -> None:
  """Writes the state file listing `kept` (oldest first) by name, the last as the latest; the
  new file replaces the old one in one rename."""
  names = [os.path.basename(path) for path in kept]
  text = ''.join([f'model_checkpoint_path: "{names[-1]}"\n'] +
                 [f'all_model_checkpoint_paths: "{name}"\n' for name in names])
  state_path = os.path.join(logdir, STATE_FILE)
  with tf.io.gfile.GFile(state_path + '.tmp', 'w') as f:
    f.write(text)
  tf.io.gfile.rename(state_path + '.tmp', state_path, overwrite=True)


def move_aside(logdir: str, files: List[str]) -> str:
  """Moves `files` into a new `<logdir>/unreadable_checkpoints_<time>/`; returns that path."""
  stamp = time.strftime('%Y%m%d-%H%M%S')
  destination = os.path.join(logdir, f'unreadable_checkpoints_{stamp}')
  suffix = 1
  while tf.io.gfile.exists(destination):
    suffix += 1
    destination = os.path.join(logdir, f'unreadable_checkpoints_{stamp}_{suffix}')
  tf.io.gfile.makedirs(destination)
  for path in files:
    tf.io.gfile.rename(path, os.path.join(destination, os.path.basename(path)))
  return destination

