"""The environment `seed_rl.evaluate` plays: the learner's, in a process without TensorFlow.

The child process imports the learner's entry point (so its flags exist), parses the learner's
flags then the user's overrides into absl's `FLAGS`, and creates one environment with the
learner's factory: `create_env_fn(0, FLAGS)`. An entry point whose flags depend on its command
line (which agent it runs, say) defines them in its main rather than on import; it exposes
`define_flags(argv)`, which the child calls with the learner's flags first. With a video it
sets `FLAGS.render_mode` to 'rgb_array' (the gym and MuJoCo factories pass it to
`gymnasium.make`) and records the first episode itself (`video.RecordFirstEpisode`).

The entry point is imported by module name; when that fails (evaluate runs from another
directory than the learner did) it is imported from its recorded file, and a script that was
run by path is loaded from its file. A factory recorded as `__main__:NAME` is NAME in the entry
point.

Environments run apart from TensorFlow as in training, where actors never import it, and that is
needed here: Mesa's software OpenGL (MuJoCo's renderer without a GPU) and TensorFlow both carry
LLVM, and a process holding both crashes at the first frame. It also leaves the caller's absl
flags alone, so one Python process can evaluate logdirs of entry points whose flags clash. The
process is a fresh interpreter that imports this module and the entry point only, never the
caller's main module (as multiprocessing's spawn would): a script calling `seed_rl.evaluate`
needs no `if __name__ == '__main__':` guard, and its code runs once.
"""

import dataclasses
import importlib
import importlib.util
import json
import os
import pickle
import re
import socket
import subprocess
import sys
import traceback
import types
from collections.abc import Callable, Sequence
from multiprocessing import connection as mp_connection
from typing import Any

from absl import flags

from seed_rl import video as video_lib
from seed_rl.common.config import flag_config
from seed_rl.common.config import run_identity

# The info keys the actors read (`seed_rl.common.actor`); the rest stays in the child process.
INFO_KEYS = ('score_reward', 'abandoned')
# The module of a factory that the learner's entry point defines, as scripts run by path (and
# learners older than `entry_point_file`) record it: `__main__:NAME`.
MAIN_MODULE = '__main__'
# The environment process: the parent's `sys.path`, then `serve` on the connection's descriptor.
_CHILD_PROGRAM = ('import json, sys; sys.path[:] = json.loads(sys.argv[1]); '
                  'from seed_rl import evaluation_env; evaluation_env.serve(int(sys.argv[2]))')


class EvaluateError(Exception):
  """A problem the user can fix (bad logdir, options or environment); the CLI exits with 2."""


@dataclasses.dataclass
class RunInfo:
  """How the learner of a logdir ran: what is needed to recreate its environment.

  Attributes:
    entry_point: the module the learner ran as (`python -m MODULE`); None for a script run by
      path (`entry_point_file` then).
    create_env_fn: its environment factory, 'package.module:function' ('__main__:function'
      for one in the entry point).
    agent: 'VTRACE', 'R2D2', 'SAC' (None when unknown).
    learner_flags: the lines of its `learner_flags.txt` (None when there is none).
    entry_point_file: the entry point's file, where it is imported from when `entry_point`
      does not import by name (None when unknown).
  """
  entry_point: str | None
  create_env_fn: str
  agent: str | None = None
  learner_flags: list[str] | None = None
  entry_point_file: str | None = None

  def program(self) -> str:
    """The entry point for messages: its module name, else its file."""
    return self.entry_point or self.entry_point_file or '?'


def how_to_name_the_entry_point(run: RunInfo) -> str:
  """The flags that name the entry point and factory instead of `run`, with `run`'s values."""
  module, _, function = (run.create_env_fn or '').partition(':')
  factory = (f'MODULE:{function or "FUNCTION"}' if module in ('', MAIN_MODULE)
             else run.create_env_fn)
  recorded = [f'entry point {run.entry_point}']
  if run.entry_point_file:
    recorded.append(f'file {run.entry_point_file}')
  recorded.append(f'environment factory {run.create_env_fn}')
  return (f'pass --entry_point=MODULE --create_env_fn={factory}, the learner\'s module '
          f'importable from here and its factory (recorded: {", ".join(recorded)}).')


def _is_missing(module_name: str, error: ImportError) -> bool:
  """Whether `error` says that `module_name` or one of its packages is not found (rather than
  something it imports)."""
  missing = getattr(error, 'name', None) if isinstance(error, ModuleNotFoundError) else None
  return bool(missing) and (module_name == missing or module_name.startswith(missing + '.'))


def _package_root(module_name: str, path: str | None) -> str | None:
  """The directory that holds `module_name`'s top package when `path` is its file, else None."""
  if not path or not os.path.isfile(path):
    return None
  *packages, name = module_name.split('.')
  if os.path.splitext(os.path.basename(path))[0] != name:
    return None
  root = os.path.dirname(path)
  for package in reversed(packages):
    if os.path.basename(root) != package:
      return None
    root = os.path.dirname(root)
  return root


def _load_script(run: RunInfo) -> types.ModuleType:
  """The script `run.entry_point_file`, imported under its file name with its directory first
  on `sys.path` (as `python FILE` has it; its `__main__` guard keeps its main from running)."""
  path = run.entry_point_file
  if not path or not os.path.isfile(path):
    where = f'ran the script {path}, which is not here' if path else 'names no entry point'
    raise EvaluateError(f'The learner {where}: {how_to_name_the_entry_point(run)}')
  name = os.path.splitext(os.path.basename(path))[0]
  loaded = sys.modules.get(name)
  if loaded is not None and getattr(loaded, '__file__', None) == path:
    return loaded
  sys.path.insert(0, os.path.dirname(path))
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  try:
    spec.loader.exec_module(module)
  except BaseException as e:
    del sys.modules[name]
    if isinstance(e, ImportError):
      raise EvaluateError(f'Cannot import the entry point {path}: {e}') from e
    raise
  return module


def import_entry_point(run: RunInfo) -> types.ModuleType:
  """The learner's entry point: the module `run.entry_point`, else `run.entry_point_file`.

  A module that is not found by name is imported by name from the directory that holds its
  top package, found from its file; a script run by path (no module name) is loaded from its
  file.

  Raises:
    EvaluateError: it cannot be imported; when it is not found, the message names the flags
      that replace the recorded entry point.
  """
  if not run.entry_point:
    return _load_script(run)
  try:
    return importlib.import_module(run.entry_point)
  except ImportError as e:
    root = _package_root(run.entry_point, run.entry_point_file)
    if not _is_missing(run.entry_point, e):
      raise EvaluateError(f'Cannot import the entry point {run.entry_point}: {e}') from e
    if root is None:
      raise EvaluateError(f'Cannot import the entry point {run.entry_point}: {e}; run from the '
                          f'directory that holds it, or {how_to_name_the_entry_point(run)}'
                          ) from e
  sys.path.insert(0, root)
  importlib.invalidate_caches()
  try:
    return importlib.import_module(run.entry_point)
  except ImportError as e:
    raise EvaluateError(f'Cannot import the entry point {run.entry_point} from {root}: {e}'
                        ) from e


def _flag_name(argument: str) -> str:
  return argument[2:].split('=', 1)[0] if argument.startswith('--') else ''


def _is_defined(name: str, flag_values: flags.FlagValues) -> bool:
  """Whether `--name` parses: a defined flag, or `--noNAME` of a defined boolean one."""
  if name in flag_values:
    return True
  return name.startswith('no') and name[2:] in flag_values and flag_values[name[2:]].boolean


def _load(run: RunInfo) -> tuple[types.ModuleType, Callable[..., Any]]:
  """The learner's entry point and its environment factory, imported in this order: the
  factory's module may define flags of its own on import (the Atari env defines --game, as the
  original's does), and importing it before the flags are parsed lets the learner's lines for
  them be parsed too.

  Raises:
    EvaluateError: either cannot be imported.
  """
  module = import_entry_point(run)
  return module, import_function(run.create_env_fn, module)


def _parse_flags(run: RunInfo, entry_point: types.ModuleType, overrides: Sequence[str] = (),
                 flag_values: flags.FlagValues = flags.FLAGS) -> flags.FlagValues:
  """Parses the learner's flags, then `overrides`, into `flag_values`, once `_load` has
  imported the entry point `entry_point` and the factory (and so defined their flags).

  An entry point's `define_flags(argv)`, if it has one, is called with the learner's flags and
  `overrides` (after a program name, as in `sys.argv`). Lines of the learner's flags that this
  process does not define then (flags of libraries the learner imported, such as TensorFlow's)
  are skipped; unknown `overrides` are errors. Defines `--render_mode` (None) for the
  environment factories.

  Raises:
    EvaluateError: a flag is unknown or invalid.
  """
  learner_lines = [line.strip() for line in run.learner_flags or []]
  define_flags = getattr(entry_point, 'define_flags', None)
  if callable(define_flags):
    define_flags([run.program()] + learner_lines + list(overrides))
  if 'render_mode' not in flag_values:
    flags.DEFINE_string('render_mode', None, "Gymnasium render mode of the environment "
                        "('rgb_array' with --video), read by the environment factories.",
                        flag_values=flag_values)
  for argument in overrides:
    if not argument.startswith('--'):
      raise EvaluateError(f'Unexpected argument {argument!r}: give flags as --flag=value.')
  learner_arguments = [line for line in learner_lines
                       if _is_defined(_flag_name(line), flag_values)]
  try:
    flag_values(['seed_rl.evaluate'] + learner_arguments + list(overrides))
  except flags.Error as e:
    raise EvaluateError(f'Invalid flags for {run.program()}: {e}'
                        f'{_from_learner_flags(e, learner_arguments, overrides)}') from e
  return flag_values


def _from_learner_flags(error: flags.Error, learner_arguments: Sequence[str],
                        overrides: Sequence[str]) -> str:
  """Where the flag that `error` names comes from the learner's flags file alone (a damaged or
  hand-edited line: an override cannot replace it, as absl stops at the first bad value), what
  to do about it; else ''."""
  named = set(re.findall(r'--(\w+)', str(error)))
  learner = {_flag_name(line) for line in learner_arguments}
  if named & (learner - {_flag_name(argument) for argument in overrides}):
    return (f'; that line is in the learner\'s {run_identity.FLAGS_FILE}: fix it there, or '
            'restore the file from a copy.')
  return ''


def import_function(qualified_name: str, entry_point: types.ModuleType | None = None
                    ) -> Callable[..., Any]:
  """The function named 'package.module:name' (a dotted name for class members).

  A `__main__` module is `entry_point` (the learner's entry point, where a factory it defined
  itself lives).

  Raises:
    EvaluateError: it cannot be imported.
  """
  module_name, _, name = qualified_name.partition(':')
  if not module_name or not name or '<locals>' in name:
    raise EvaluateError(f'Cannot import the environment factory {qualified_name!r}: expected '
                        'MODULE:FUNCTION of a module-level function (--create_env_fn).')
  try:
    if module_name == MAIN_MODULE and entry_point is not None:
      value = entry_point
    else:
      value = importlib.import_module(module_name)
    for attribute in name.split('.'):
      value = getattr(value, attribute)
  except (ImportError, AttributeError) as e:
    raise EvaluateError(f'Cannot import the environment factory {qualified_name}: {e}') from e
  return value


def create_environment(run: RunInfo, overrides: Sequence[str] = (), video: str | None = None
                       ) -> Any:
  """The learner's environment: `create_env_fn(0, FLAGS)` after `_load` and `_parse_flags`.

  With `video`, the env is created with `FLAGS.render_mode = 'rgb_array'` and wrapped in
  `video.RecordFirstEpisode` (an MP4 of its first episode at that path).

  Raises:
    EvaluateError: bad flags or factory, a factory that raises ValueError or ImportError
      (e.g. an unknown environment, or its package not installed), one that reads a flag the
      entry point does not define (absl's AttributeError, or a typed config's
      `UndefinedFlagError`), or one that fails in OpenGL when asked to render (MuJoCo
      without a working MUJOCO_GL backend).
  """
  entry_point, create_env = _load(run)
  config = _parse_flags(run, entry_point, overrides)
  video_config = video_lib.VideoConfig.from_flags(config)
  if video:
    config.render_mode = 'rgb_array'
    video_lib.prepare_rendering()
  try:
    env = create_env(0, config)
  except Exception as e:  # Re-raised unless it is one of those below.
    if video and video_lib.is_opengl_failure(e):
      name = video_config.env_name or run.create_env_fn
      raise EvaluateError(str(video_lib.cannot_render(name, e))) from e
    missing = e.flag if isinstance(e, flag_config.UndefinedFlagError) else None
    if isinstance(e, (ImportError, ValueError)) and not missing:
      raise EvaluateError(f'Cannot create the environment with {run.create_env_fn}: {e}') from e
    missing = missing or _undefined_flag(e, config)
    if missing:
      raise EvaluateError(
          f'{run.create_env_fn} reads the flag --{missing}, which {run.program()} does not '
          'define: pass --entry_point=MODULE, an entry point that defines the '
          'environment\'s flags (e.g. seed_rl.environments.atari.vtrace_main for Atari).') from e
    raise
  return video_lib.RecordFirstEpisode(env, video, video_config) if video else env


def _undefined_flag(error: Exception, config: flags.FlagValues) -> str | None:
  """The flag name when `error` is absl's AttributeError for reading a flag `config` does
  not define, else None."""
  if not isinstance(error, AttributeError) or len(error.args) != 1:
    return None
  name = error.args[0]
  if isinstance(name, str) and name.isidentifier() and name not in config:
    return name
  return None


def _info(info: dict[str, Any]) -> dict[str, Any]:
  return {key: info[key] for key in INFO_KEYS if key in info}


def _send_error(connection: Any, error: BaseException) -> None:
  """Sends `error` pickled, its text and the current traceback to the parent (which raises a
  RuntimeError of the text when the error does not pickle here or unpickle there: a class of a
  script the parent cannot import); nothing if the parent is gone."""
  child_traceback = traceback.format_exc()
  try:
    pickled = pickle.dumps(error)
  except Exception:  # noqa: BLE001  (it does not pickle: the parent gets the text)
    pickled = None
  try:
    connection.send(('error', pickled, f'{type(error).__name__}: {error}', child_traceback))
  except (OSError, EOFError):
    pass


def _unpickled_error(pickled: bytes | None, text: str) -> BaseException:
  """The child's error from `_send_error`, else a RuntimeError of its text."""
  if pickled is not None:
    try:
      return pickle.loads(pickled)
    except Exception:  # noqa: BLE001, S110  (its class does not import here)
      pass
  return RuntimeError(text)


def serve(descriptor: int) -> None:
  """The environment process's main (`_CHILD_PROGRAM`): on the connection of the socket
  `descriptor`, receives `(run, overrides, video, seed)`, then serves as `_serve`."""
  connection = mp_connection.Connection(descriptor)
  try:
    run, overrides, video, seed = connection.recv()
  except (OSError, EOFError):  # The parent is gone.
    connection.close()
    return
  _serve(connection, run, overrides, video, seed)


def _serve(connection: Any, run: RunInfo, overrides: Sequence[str], video: str | None,
           seed: int | None) -> None:
  """The child process: creates the environment and resets it with `seed`, then answers
  `EnvironmentProcess` requests.

  Every answer is `('ok', value)`, or `('error', pickled exception, its text, traceback text)`
  after which the process ends (the parent raises the exception).
  """
  env = None
  try:
    env = create_environment(run, overrides, video)
    observation, info = env.reset(seed=seed)
    connection.send(('ok', (video_lib.env_name(env, video_lib.VideoConfig.from_flags(flags.FLAGS)),
                             observation, _info(info))))
    while True:
      request, argument = connection.recv()
      if request == 'reset':
        observation, info = env.reset(seed=argument)
        connection.send(('ok', (observation, _info(info))))
      elif request == 'step':
        observation, reward, terminated, truncated, info = env.step(argument)
        connection.send(('ok', (observation, float(reward), bool(terminated), bool(truncated),
                                _info(info))))
      elif request == 'close':
        summary = getattr(env, 'summary', None)
        env, closing = None, env
        closing.close()
        connection.send(('ok', summary() if summary else None))
        return
      else:
        raise ValueError(f'Unknown request {request!r}.')
  except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001  (all reported to the parent)
    _send_error(connection, e)
  finally:
    if env is not None:
      try:
        env.close()
      except Exception:  # noqa: BLE001, S110  (already reporting the first error)
        pass
    connection.close()


class EnvironmentProcess:
  """The learner's environment in a child process, with Gymnasium's `reset`, `step`, `close`.

  The child resets the environment with `seed` as soon as it exists, so that problems (flags,
  factory, rendering: a video's first frame is taken then) show before the caller loads
  anything; the first `reset` here returns that observation (its seed must be `seed`). `step`
  and `reset` return only the info keys of `INFO_KEYS`. An exception in the child is raised
  again here, with the child's traceback as a note; a `video.RenderError` becomes an
  `EvaluateError` with its message.
  """

  def __init__(self, run: RunInfo, overrides: Sequence[str] = (), video: str | None = None,
               seed: int | None = None):
    parent_socket, child_socket = socket.socketpair()
    try:
      with child_socket:
        descriptor = child_socket.fileno()
        self._process = subprocess.Popen(
            [sys.executable, '-c', _CHILD_PROGRAM, json.dumps([str(p) for p in sys.path]),
             str(descriptor)], stdin=subprocess.DEVNULL, pass_fds=[descriptor])
    except BaseException:
      parent_socket.close()
      raise
    self._connection = mp_connection.Connection(parent_socket.detach())
    try:
      self._connection.send((run, list(overrides), video, seed))
    except OSError as e:  # The child ended before reading it (it failed to start).
      self._connection.close()
      returncode = self._end_process(5)
      raise EvaluateError(f'The environment process ended (exit code {returncode}) before it '
                          f'received the run ({e}); its own error output, if any, is on stderr.') from e
    self._seed = seed
    self._first_reset = None
    self.name = None

  def _end_process(self, timeout: float) -> int:
    """Waits up to `timeout` seconds for the child to end, then kills it; its exit code."""
    try:
      return self._process.wait(timeout)
    except subprocess.TimeoutExpired:
      self._process.kill()
      return self._process.wait()

  def wait_ready(self) -> str:
    """Waits until the environment exists and is reset; returns its name (for messages)."""
    self.name, observation, info = self._receive()
    self._first_reset = (observation, info)
    return self.name

  def _receive(self) -> Any:
    while not self._connection.poll(0.5):
      if self._process.poll() is not None:
        raise EvaluateError(f'The environment process ended (exit code '
                            f'{self._process.returncode}) without an answer.')
    try:
      message = self._connection.recv()
    except EOFError:
      try:
        self._process.wait(5)
      except subprocess.TimeoutExpired:
        pass
      raise EvaluateError(f'The environment process ended (exit code '
                          f'{self._process.returncode}) without an answer.') from None
    if message[0] == 'error':
      _, pickled, text, child_traceback = message
      error = _unpickled_error(pickled, text)
      self._connection.close()  # The child process ends after an error.
      if isinstance(error, video_lib.RenderError):
        raise EvaluateError(str(error))
      if not isinstance(error, EvaluateError):
        error.add_note(f'In the environment process:\n{child_traceback}')
      raise error
    return message[1]

  def _call(self, request: str, argument: Any = None) -> Any:
    self._connection.send((request, argument))
    return self._receive()

  def reset(self, *, seed: int | None = None) -> tuple[Any, dict[str, Any]]:
    if self.name is None:
      self.wait_ready()
    if self._first_reset is not None:
      if seed != self._seed:
        raise ValueError(f'The first reset of an EnvironmentProcess uses its seed '
                         f'{self._seed}, not {seed}.')
      first_reset, self._first_reset = self._first_reset, None
      return first_reset
    return self._call('reset', seed)

  def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    return self._call('step', action)

  def close(self, raise_errors: bool = True) -> Any:
    """Closes the environment and ends the process; returns the video summary, if any.

    With `raise_errors=False` (cleaning up after another error) failures are ignored.
    """
    try:
      if self._process.poll() is None and not self._connection.closed:
        return self._call('close')
      return None
    except (Exception, KeyboardInterrupt):
      if raise_errors:
        raise
      return None
    finally:
      self._connection.close()
      self._end_process(10 if raise_errors else 2)
