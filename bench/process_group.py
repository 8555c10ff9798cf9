"""The learner and actor processes of one benchmark run, each logging to its own file."""

import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]


# TensorFlow's thread settings: threads one op may use, and ops run at once.
THREAD_VARIABLES = ('TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS')


def learner_thread_env(num_actors: int) -> Dict[str, str]:
  """The thread settings run_local.sh gives a learner: where the actors alone fill the cores
  and the caller set neither variable, one thread per op and two ops at a time (an inference
  batch beside a training step); else none (TensorFlow's default, or the caller's)."""
  if any(os.environ.get(name) for name in THREAD_VARIABLES) or (
      len(os.sched_getaffinity(0)) > num_actors):
    return {}
  return dict(zip(THREAD_VARIABLES, ('1', '2')))


def peak_rss_mb(pid: int) -> float:
  """Peak resident memory of a live process (VmHWM), or NaN once it is gone."""
  try:
    with open(f'/proc/{pid}/status') as status:
      return int(re.search(r'VmHWM:\s+(\d+) kB', status.read()).group(1)) / 1024
  except (OSError, AttributeError):
    return float('nan')


def cpu_seconds(pid: int) -> float:
  """CPU time (user and system, all threads) a live process has used so far, or NaN once it is
  gone: its difference over a window and the window's length give the cores it kept busy."""
  try:
    with open(f'/proc/{pid}/stat') as stat:
      # The command's name, in parentheses, may hold spaces; utime and stime are fields 14 and
      # 15 of proc(5), the 12th and 13th after it.
      fields = stat.read().rsplit(')', 1)[1].split()
  except OSError:
    return float('nan')
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def run_in_logdir(logdir: Optional[str], run: Callable[[pathlib.Path], Any]) -> Any:
  """`run(path)` in `logdir`, a new directory that keeps the logs, or in a temporary one."""
  if logdir:
    path = pathlib.Path(logdir)
    path.mkdir(parents=True, exist_ok=False)
    return run(path)
  with tempfile.TemporaryDirectory() as temporary:
    return run(pathlib.Path(temporary))


def _exit_on_sigterm(signum, unused_frame) -> None:
  sys.exit(128 + signum)


class ProcessGroup(object):
  """Starts `python -m MODULE FLAGS EXTRA` processes logging to `logdir/NAME.log`; leaving the
  `with` block kills every one of them, so a benchmark never leaves processes behind. Inside the
  block SIGTERM (`kill`, `pkill`) leaves it too, as Ctrl-C does.

  `python` is the interpreter (this one by default; another virtualenv's for a program that
  cannot share the project's). With `own_sessions` each process starts in a session of its own
  and leaving the block kills the session's whole process group: the processes it started
  itself too (as a framework's workers), which would otherwise outlive it."""

  def __init__(self, logdir: pathlib.Path, module: str, flags: Sequence[str],
               env: Optional[Dict[str, str]] = None, python: str = sys.executable,
               own_sessions: bool = False):
    self._logdir, self._module, self._flags = logdir, module, list(flags)
    self._python, self._own_sessions = python, own_sessions
    self._env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=str(ROOT),
                     PYTHONUNBUFFERED='1', **(env or {}))
    self.processes: List[subprocess.Popen] = []
    self._logs = []
    self._previous_sigterm_handler = None

  def start(self, name: str, extra: Sequence[str],
            extra_env: Optional[Dict[str, Optional[str]]] = None) -> subprocess.Popen:
    """Starts process `name`; `extra_env` adds to the group's environment variables (None
    removes one)."""
    log = open(self._logdir / f'{name}.log', 'w')
    self._logs.append(log)
    env = {variable: value for variable, value in dict(self._env, **(extra_env or {})).items()
           if value is not None}
    process = subprocess.Popen(
        [self._python, '-m', self._module] + self._flags + list(extra), cwd=ROOT, stdout=log,
        stderr=subprocess.STDOUT, env=env, start_new_session=self._own_sessions)
    self.processes.append(process)
    return process

  def __enter__(self) -> 'ProcessGroup':
    if threading.current_thread() is threading.main_thread():  # Only it may set handlers.
      self._previous_sigterm_handler = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return self

  def __exit__(self, *exc_info) -> None:
    if self._previous_sigterm_handler is not None:
      signal.signal(signal.SIGTERM, self._previous_sigterm_handler)
    for process in self.processes:
      if self._own_sessions:
        try:  # The group outlives its first process while any process it started lives.
          os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
          pass
      elif process.poll() is None:
        process.send_signal(signal.SIGKILL)
      process.wait()
    for log in self._logs:
      log.close()
