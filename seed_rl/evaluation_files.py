"""The logdir files `seed_rl.evaluate` reads, with errors that name the file and what to do.

A logdir can be damaged: a disk that filled up, a copy cut short, a file overwritten or edited
by hand. Rather than a traceback from whichever reader meets the damage first (TensorFlow's
checkpoint reader, a UTF-8 decoder, protobuf), every problem here is an `EvaluateError` that
names the file, says what is wrong with it and what to do about it.

The exported policy (`saved_model/`) is checked in two steps: its files are looked at before
anything loads (`check_saved_model_files`: present, files, not empty), and when TensorFlow still
cannot load it, `load_failure` looks inside them to tell which one is damaged (the graph
`saved_model.pb`, the variables' index or their data, whose records carry checksums).

Local paths and remote URLs (`gs://`, read through TensorFlow's file system) alike; TensorFlow
is imported only for remote paths and to look inside a policy that did not load.
"""

import os
import re
from typing import Any

from seed_rl import evaluation_env
from seed_rl.common.config import run_identity

EvaluateError = evaluation_env.EvaluateError

# What `seed_rl.common.learner_runtime.checkpoints` exports (it imports TensorFlow).
SAVED_MODEL_DIR = 'saved_model'
GRAPH_FILES = ('saved_model.pb', 'saved_model.pbtxt')  # TensorFlow loads either.
VARIABLES_PREFIX = os.path.join('variables', 'variables')
_DATA_FILE = re.compile(r'^variables\.data-(\d{5})-of-(\d{5})$')


def is_remote(path: str) -> bool:
  return '://' in path


def _gfile() -> Any:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (gs:// and other remotes)
  return tf.io.gfile


def exists(path: str) -> bool:
  """Whether `path` exists (a link to nothing does not)."""
  return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def _is_directory(path: str) -> bool:
  return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def _size(path: str) -> int:
  return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def _list(directory: str) -> list[str]:
  if not _is_directory(directory):
    return []
  names = _gfile().listdir(directory) if is_remote(directory) else os.listdir(directory)
  return [name.rstrip('/') for name in names]


def _read_remote(path: str) -> bytes:
  """The content of the remote file `path`.

  Raises:
    run_identity.RecordError: it is a directory or cannot be read, naming it.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tf.io.gfile.isdir(path):
    raise run_identity.RecordError(f'{path} is a directory, not a file')
  try:
    with tf.io.gfile.GFile(path, 'rb') as f:
      return f.read()
  except tf.errors.OpError as e:
    raise run_identity.RecordError(
        f'{path} cannot be read ({e.message or type(e).__name__})') from e


def read_record_file(path: str, remedy: str) -> str:
  """The text of the run record file `path` (`runs.jsonl`, `learner_flags.txt`).

  Raises:
    EvaluateError: it is a directory, cannot be read, is not UTF-8 text or is empty; the
      message ends with `remedy`.
  """
  try:
    if is_remote(path):
      text = run_identity.decode_text(_read_remote(path), path)
    else:
      text = run_identity.read_text(path)
  except run_identity.RecordError as e:
    raise EvaluateError(f'{e}: {remedy}') from e
  if not text.strip():
    raise EvaluateError(f'{path} is empty (learners write it when they start), so it is '
                        f'damaged: {remedy}')
  return text


def export_again(directory: str) -> str:
  """What to do about the damaged exported policy `directory` (a logdir's `saved_model/`)."""
  flag_file = os.path.join(os.path.dirname(directory.rstrip('/')), run_identity.FLAGS_FILE)
  return (f'restore {SAVED_MODEL_DIR}/ from a copy, or export it again: run the learner on this '
          f'logdir once more with the flags it trained with ({flag_file}); it restores its latest '
          f'checkpoint and exports {SAVED_MODEL_DIR}/ (at once when its budget is spent, else '
          'at its next save or when it is stopped)')


def _damaged(path: str, problem: str, directory: str) -> EvaluateError:
  return EvaluateError(f'{path} {problem}, so the exported policy is damaged: '
                       f'{export_again(directory)}')


def _file_problem(path: str) -> str | None:
  """What is wrong with the file `path` at a glance (missing, a directory, empty), or None."""
  if not exists(path):
    return 'is missing'
  if _is_directory(path):
    return 'is a directory, not a file'
  if _size(path) == 0:
    return 'is empty (0 bytes)'
  return None


def _graph_file(directory: str) -> str:
  """The policy's graph file: `saved_model.pb`, else a `saved_model.pbtxt` that exists."""
  paths = [os.path.join(directory, name) for name in GRAPH_FILES]
  return next((path for path in paths if exists(path)), paths[0])


def _data_files(directory: str) -> list[str]:
  """The variables' data files the export should have: as many as their names say (the
  learner writes one), `variables.data-00000-of-00001` where there is none."""
  counts = [int(match.group(2)) for match in map(_DATA_FILE.match, _list(
      os.path.join(directory, 'variables'))) if match]
  count = max(counts, default=1)
  prefix = os.path.join(directory, VARIABLES_PREFIX)
  return [f'{prefix}.data-{shard:05d}-of-{count:05d}' for shard in range(count)]


def check_saved_model_files(directory: str) -> None:
  """Checks that the files of the exported policy `directory` (a logdir's `saved_model/`) are
  there, are files and are not empty.

  Raises:
    EvaluateError: the first that is not, named, with what to do.
  """
  if not _is_directory(directory):
    raise _damaged(directory, 'is not a directory', directory)
  for path in [_graph_file(directory), os.path.join(directory, f'{VARIABLES_PREFIX}.index'),
               *_data_files(directory)]:
    problem = _file_problem(path)
    if problem:
      raise _damaged(path, problem, directory)


def _first_line(error: BaseException) -> str:
  """The first line of an error's text (TensorFlow adds hints on later lines that do not
  apply to a damaged file, such as loading "on a different device")."""
  text = getattr(error, 'message', None) or str(error) or type(error).__name__
  return text.strip().splitlines()[0]


def _graph_problem(path: str) -> str | None:
  """What is wrong with the graph file `path` (it does not parse, or has no graph), or None."""
  if path.endswith('.pbtxt'):
    return None
  from google.protobuf import message  # pylint: disable=g-import-not-at-top
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  with _gfile().GFile(path, 'rb') as f:
    data = f.read()
  try:
    saved_model = saved_model_pb2.SavedModel.FromString(data)
  except message.DecodeError as e:
    return f'cannot be parsed ({e})'
  if not saved_model.meta_graphs:
    return 'holds no graph'
  return None


def _variables_problem(directory: str) -> tuple[str, str] | None:
  """(file, what is wrong) where the variables' index or data do not read back whole (the
  data's checksums included), else None."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  prefix = os.path.join(directory, VARIABLES_PREFIX)
  try:
    reader = tf.train.load_checkpoint(prefix)
  except Exception as e:  # noqa: BLE001  (a damaged index raises many kinds)
    return f'{prefix}.index', f'cannot be read ({_first_line(e)})'
  data_files = _data_files(directory)
  data = data_files[0] if len(data_files) == 1 else f'one of {", ".join(data_files)}'
  for name in reader.get_variable_to_shape_map():
    try:
      reader.get_tensor(name)
    except IndexError:  # TensorFlow's reader: "Read less bytes than requested".
      return data, 'is shorter than its index says (cut short)'
    except Exception as e:  # noqa: BLE001  (checksum and format errors of many kinds)
      return data, f'does not read back ({_first_line(e)})'
  return None


def load_failure(directory: str, error: BaseException) -> EvaluateError:
  """The error to raise when TensorFlow could not load the exported policy `directory` after
  `check_saved_model_files` passed: the damaged file where one is found, else `error`'s first
  line; either with what to do."""
  graph = _graph_file(directory)
  problem = _graph_problem(graph)
  if problem:
    return _damaged(graph, problem, directory)
  found = _variables_problem(directory)
  if found:
    return _damaged(*found, directory)
  return EvaluateError(f'Cannot load the policy in {directory}: {_first_line(error)}; '
                       f'{export_again(directory)}')
