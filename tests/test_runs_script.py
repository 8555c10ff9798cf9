"""scripts/runs.sh, the run records run_local.sh and stop_local.sh share: which pid still runs."""

import pathlib
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(60)


def _alive(pid: int) -> bool:
  result = subprocess.run(['bash', '-c', f'source scripts/runs.sh; seed_rl_pid_alive {pid}'],
                          cwd=ROOT, timeout=20)
  return result.returncode == 0


def _state(pid: int) -> str:
  return pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(') ', 1)[1].split()[0]


def test_an_exited_process_its_parent_has_not_reaped_is_not_alive():
  """A caller that waits for stop_local.sh before it reaps its own run_local.sh (a Python
  subprocess, a CI harness) leaves a zombie behind; stop_local.sh must not wait for it."""
  running = subprocess.Popen(['sleep', '30'])
  exited = subprocess.Popen(['true'])
  try:
    deadline = time.time() + 10
    while _state(exited.pid) != 'Z':  # Exited, not reaped: nothing calls wait() on it yet.
      assert time.time() < deadline, 'the child never exited'
      time.sleep(0.05)
    assert _alive(running.pid)
    assert not _alive(exited.pid)
  finally:
    running.kill()
    running.wait(10)
    exited.wait(10)
  assert not _alive(running.pid)
