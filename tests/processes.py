"""Starts seed_rl entry points as real processes for tests, and always cleans them up."""

import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

from seed_rl.launch import progress_monitor

ROOT = pathlib.Path(__file__).resolve().parents[1]

_IMPORT_WITHOUT_TENSORFLOW = ('import importlib, sys\n'
                              'for module in sys.argv[1:]:\n'
                              '  importlib.import_module(module)\n'
                              '  assert "tensorflow" not in sys.modules, module\n')


def import_without_tensorflow(modules: Sequence[str]) -> subprocess.CompletedProcess:
  """Imports `modules` in order in a fresh interpreter, which fails with an AssertionError
  naming the first of them after whose import TensorFlow is loaded."""
  return subprocess.run([sys.executable, '-c', _IMPORT_WITHOUT_TENSORFLOW, *modules], cwd=ROOT,
                        capture_output=True, text=True, timeout=60)


class Process(object):
  """A child process whose combined output goes to a log file that tests can wait on."""

  def __init__(self, name: str, args: Sequence[str], log_dir: pathlib.Path,
               env: Optional[Dict[str, str]] = None):
    self.name = name
    self.log_path = log_dir / f'{name}.log'
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONUNBUFFERED='1',
                       PYTHONPATH=str(ROOT))
    environment.update(env or {})
    self._log_file = open(self.log_path, 'ab')
    self.popen = subprocess.Popen(list(args), cwd=ROOT, env=environment, stdout=self._log_file,
                                  stderr=subprocess.STDOUT, start_new_session=True)

  def log(self) -> str:
    return self.log_path.read_text(errors='replace')

  def wait_for(self, pattern: str, timeout: float, count: int = 1) -> List[re.Match]:
    """Waits until `pattern` matched `count` times in the log; fails early if the process died."""
    deadline = time.time() + timeout
    regex = re.compile(pattern)
    while True:
      matches = list(regex.finditer(self.log()))
      if len(matches) >= count:
        return matches
      if self.popen.poll() is not None:
        raise AssertionError(f'{self.name} exited with {self.popen.returncode} before '
                             f'{pattern!r} x{count}; log tail:\n{self.log()[-4000:]}')
      if time.time() > deadline:
        raise AssertionError(f'{self.name}: no {pattern!r} x{count} within {timeout} s; '
                             f'log tail:\n{self.log()[-4000:]}')
      time.sleep(0.2)

  def signal(self, signum: int) -> None:
    if self.popen.poll() is None:
      self.popen.send_signal(signum)

  def wait(self, timeout: float) -> int:
    return self.popen.wait(timeout)

  def kill(self) -> None:
    """Kills the whole process group (the entry point and anything it started)."""
    if self.popen.poll() is None:
      try:
        os.killpg(self.popen.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
      self.popen.wait(10)
    self._log_file.close()


class Processes(object):
  """Context manager owning every started process; kills all of them on exit."""

  def __init__(self, log_dir: pathlib.Path):
    self.log_dir = log_dir
    self._processes: List[Process] = []

  def start(self, name: str, module: str, flags: Sequence[str],
            env: Optional[Dict[str, str]] = None) -> Process:
    process = Process(name, [sys.executable, '-m', module] + list(flags), self.log_dir, env)
    self._processes.append(process)
    return process

  def __enter__(self) -> 'Processes':
    return self

  def __exit__(self, *exc_info) -> None:
    for process in self._processes:
      process.kill()


def frames_progress(learner: Process) -> int:
  """Environment frames of the learner's last 'Progress:' line (0 before the first)."""
  matches = re.findall(r'Progress: (\d+)/', learner.log())
  return int(matches[-1]) if matches else 0


def episode_returns(learner: Process, kind: Optional[str] = None) -> List[float]:
  """The returns of the episodes the learner's log accounts for, oldest first.

  The learner logs a line per kind of environment every few seconds; the episodes a line counts
  without showing them stand in with their mean (`progress_monitor.parse_episode_returns`).
  `kind`: 'training' or 'eval' to keep only those.
  """
  return progress_monitor.parse_episode_returns(learner.log(), kind)


def shm_sockets(address: str) -> int:
  """How many unix sockets of the machine hold the abstract name of `shm:NAME` (this user's): the
  server's listening socket and its accepted connections; 0 once every process holding one is
  gone."""
  from seed_rl.shm import address as shm_address  # pylint: disable=g-import-not-at-top
  name = '@' + shm_address.socket_address(address)[1:]
  with open('/proc/net/unix') as table:
    return sum(1 for fields in map(str.split, table) if len(fields) == 8 and fields[-1] == name)


def wait_until(condition: Callable[[], bool], timeout: float) -> None:
  """Waits until `condition()` holds; fails the test after `timeout` seconds."""
  deadline = time.monotonic() + timeout
  while not condition():
    assert time.monotonic() < deadline, 'timed out'
    time.sleep(0.01)
