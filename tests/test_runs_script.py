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


def _resumed_checkpoint(logdir) -> subprocess.CompletedProcess:
  return subprocess.run(['bash', '-c', 'source scripts/runs.sh; seed_rl_resumed_checkpoint "$1"',
                         'bash', str(logdir)], cwd=ROOT, capture_output=True, text=True,
                        timeout=20)


def test_the_checkpoint_a_learner_resumes_from_is_its_managers_latest(tmp_path):
  """run_local.sh names it before the run starts (and says nothing of one for a new logdir)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (only this test needs it)
  result = _resumed_checkpoint(tmp_path)
  assert result.returncode == 1 and result.stdout == ''
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.)), str(tmp_path),
                                       max_to_keep=2)
  manager.save(checkpoint_number=10)
  manager.save(checkpoint_number=20)
  result = _resumed_checkpoint(tmp_path)
  assert result.returncode == 0 and result.stdout == f'{tmp_path}/ckpt-20\n'
  # One whose files are gone is not resumed (the learner tries the one before).
  for path in tmp_path.glob('ckpt-20.*'):
    path.unlink()
  assert _resumed_checkpoint(tmp_path).stdout == f'{tmp_path}/ckpt-10\n'
  for path in tmp_path.glob('ckpt-10.*'):
    path.unlink()
  result = _resumed_checkpoint(tmp_path)
  assert result.returncode == 1 and result.stdout == ''
