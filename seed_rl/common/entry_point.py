"""What every `*_main.py` does: run the actor loop or the learner, chosen by --run_mode.

Learner and actors run the same binary with the same flags, as in the original. The learner
module is imported only in learner mode, so actor processes never import TensorFlow.

TensorFlow's start-up noise, which says nothing on a CPU-only or healthy machine, is silenced by
default. Importing this module sets `TF_CPP_MIN_LOG_LEVEL=2` (TensorFlow's C++ INFO and WARNING
lines) unless the environment sets it to a non-empty value. The learner imports TensorFlow and
finds its devices with the lines TensorFlow's libraries print before any setting applies
filtered out (`_QUIET_LINES`; cuInit's failure and "no CUDA drivers" only on a machine without
NVIDIA devices, where they are expected), and drops TensorFlow's Python INFO lines (checkpoint
sharding times, SavedModel assets). With `TF_CPP_MIN_LOG_LEVEL=0` nothing is filtered; `--v=1`
keeps TensorFlow's Python INFO lines.
"""

import atexit
import gc
import glob
import importlib
import logging as std_logging
import os
import re
import sys
import tempfile
from typing import Any, Callable, Optional, Sequence

# Before anything imports TensorFlow.
if not os.environ.get('TF_CPP_MIN_LOG_LEVEL', '').strip():
  os.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags
from absl import logging

from seed_rl.common import actor
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS

# Lines TensorFlow's libraries print while TensorFlow is imported and its devices are found,
# which signal nothing: absl's preface, CUDA plugins registering twice on GPU machines, XLA's
# computation placer registered twice.
_QUIET_LINES = re.compile(
    r'All log messages before absl::InitializeLog\(\) is called are written to STDERR'
    r'|Unable to register cu(DNN|FFT|BLAS) factory'
    r'|computation placer already registered'
    r'|oneDNN custom operations are on'
    r'|This TensorFlow binary is optimized to use available CPU instructions'
    r'|To enable the following instructions: .* rebuild TensorFlow')
# Lines that are expected only where there is no NVIDIA device at all.
_NO_GPU_LINES = re.compile(r'cudart_stub\.cc.*Could not find cuda drivers'
                           r'|failed call to cuInit')


def _has_nvidia_device() -> bool:
  return bool(glob.glob('/dev/nvidia[0-9]*'))


def is_quiet_line(line: str, has_gpu: bool) -> bool:
  """Whether a line TensorFlow printed at start-up is noise (see the module docstring)."""
  return bool(_QUIET_LINES.search(line) or (not has_gpu and _NO_GPU_LINES.search(line)))


def _import_learner_quietly(learner_module: str) -> Any:
  """Imports `learner_module` (and TensorFlow) and finds the devices, dropping the noise that
  TensorFlow's libraries print meanwhile; every other line is printed as it was."""
  if os.environ.get('TF_CPP_MIN_LOG_LEVEL', '').strip() in ('', '0'):
    return importlib.import_module(learner_module)
  sys.stderr.flush()
  captured = tempfile.TemporaryFile()
  saved_stderr = os.dup(2)
  os.dup2(captured.fileno(), 2)
  try:
    module = importlib.import_module(learner_module)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.list_physical_devices('GPU')  # Initializes CUDA, which speaks when it fails.
  finally:
    sys.stderr.flush()
    os.dup2(saved_stderr, 2)
    os.close(saved_stderr)
    captured.seek(0)
    has_gpu = _has_nvidia_device()
    kept = [line for line in captured.read().decode(errors='replace').splitlines(True)
            if not is_quiet_line(line, has_gpu)]
    captured.close()
    if kept:
      sys.stderr.write(''.join(kept))
      sys.stderr.flush()
  if FLAGS.verbosity < 1:
    # Checkpoint sharding times, SavedModel assets and fingerprints: a few lines per save.
    tf.get_logger().setLevel('WARNING')
    logging.get_absl_handler().addFilter(
        _InfoOfPackageFilter(os.path.dirname(os.path.abspath(tf.__file__))))
  return module


class _InfoOfPackageFilter(std_logging.Filter):
  """Drops the records below WARNING of the modules under `directory` (TensorFlow logs some
  of its INFO lines through absl's logger, which the learner's own lines share)."""

  def __init__(self, directory: str):
    super().__init__()
    self._prefix = os.path.join(directory, '')

  def filter(self, record: std_logging.LogRecord) -> bool:
    return record.levelno >= std_logging.WARNING or not record.pathname.startswith(self._prefix)


def run(argv: Sequence[str], create_env_fn: Callable[[int, Any], Any], learner_module: str,
        create_agent_fn: Callable[..., Any], create_optimizer_fn: Callable[[int], Any],
        prepare_learner: Optional[Callable[[], None]] = None,
        create_config_fn: Optional[Callable[[], Any]] = None) -> None:
  """Runs `actor_loop(create_env_fn)` or `<learner_module>.learner_loop(...)`.

  Args:
    argv: the arguments left by absl (only the program name is allowed).
    create_env_fn: `(env_id, config) -> env`, `config` the flags.
    learner_module: e.g. 'seed_rl.agents.vtrace.learner'.
    create_agent_fn, create_optimizer_fn: passed to `learner_loop`.
    prepare_learner: run in the learner before `learner_loop`, once TensorFlow is imported
      (e.g. parsing the gin configuration).
    create_config_fn: `() -> config`, the learner's typed config (e.g.
      `VTraceConfig.from_flags`), built after `prepare_learner` and handed to `learner_loop`;
      None: `learner_loop` reads the flags itself.

  After training, the learner's process exits without collecting TensorFlow's objects once
  more: `gc.freeze` runs at the interpreter's exit, not when `run` returns.
  """
  if len(argv) > 1:
    raise app.UsageError(f'Too many command-line arguments: {list(argv[1:])}')
  if FLAGS.run_mode == 'actor':
    try:
      actor.actor_loop(create_env_fn)
    except actor.FatalActorError as e:
      sys.exit(f'seed_rl actor: {e}')
  elif FLAGS.run_mode == 'learner':
    learner = _import_learner_quietly(learner_module)
    try:
      if prepare_learner is not None:
        prepare_learner()
      if create_config_fn is None:
        learner.learner_loop(create_env_fn, create_agent_fn, create_optimizer_fn)
      else:
        learner.learner_loop(create_env_fn, create_agent_fn, create_optimizer_fn,
                             config=create_config_fn())
      # Checkpoints, summaries and the exported policy are written: the interpreter's last
      # garbage collections over TensorFlow's many objects would only delay the exit by seconds.
      # Frozen at exit, not now: whatever the caller runs after `run` is collected as usual.
      atexit.register(gc.freeze)
    except ValueError as e:  # A configuration the learner refuses: one line, no traceback.
      logging.vlog(1, 'The learner stopped:', exc_info=True)
      sys.exit(f'seed_rl learner: {e} (--v=1 shows the traceback)')
  else:
    raise ValueError(f'Unsupported run mode {FLAGS.run_mode}; use --run_mode=learner or '
                     '--run_mode=actor.')
