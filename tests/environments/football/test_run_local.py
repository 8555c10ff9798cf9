"""`./run_local.sh football vtrace 2` end to end: install check, learner, 2 actors, real engine."""

import os
import pathlib
import re
import signal
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.gfootball


@pytest.mark.timeout(300)
def test_run_local_football_vtrace_completes_training_steps(tmp_path):
  logdir = tmp_path / 'logdir'
  # 2 unrolls of 8 steps (no action repeats) per training step: 16 frames, so 10 steps.
  args = ['./run_local.sh', 'football', 'vtrace', '2', f'--logdir={logdir}',
          f'--server_address=unix:{tmp_path}/learner.sock', '--game=academy_empty_goal_close',
          '--unroll_length=8', '--batch_size=2', '--total_environment_frames=160']
  environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1')
  # Its own process group, so that a timeout can stop run_local.sh and all it started.
  process = subprocess.Popen(args, cwd=ROOT, env=environment, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
  try:
    stdout, stderr = process.communicate(timeout=270)
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait(10)
  # run_local.sh stopped every process of the run.
  assert subprocess.run(['pgrep', '-f', '--', f'--logdir={logdir}'], check=False,
                        capture_output=True).stdout == b''
  logs = logdir / 'logs'
  learner_log = (logs / 'learner.log').read_text() if (logs / 'learner.log').exists() else ''
  assert process.returncode == 0, (stdout[-2000:] + stderr[-2000:] +
                                  learner_log[-3000:])
  assert 'training finished' in stdout
  assert re.search(r'Progress: \d+/160 environment frames', learner_log)
  assert 'Training finished at iteration 10 (160 environment frames)' in learner_log
  assert 'Traceback' not in learner_log
  for task in (0, 1):
    actor_log = (logs / f'actor_{task}.log').read_text()
    assert f'Actor {task} connected' in actor_log
    assert 'Traceback' not in actor_log
