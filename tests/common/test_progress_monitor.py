"""Tests of the progress line that run_local.sh shows."""

import pytest

from seed_rl.common import progress_monitor

pytestmark = pytest.mark.timeout(30)


def test_progress_line_from_learner_log(tmp_path):
  log = tmp_path / 'learner.log'
  log.write_text('I1202 learner.py:1] Return: 10.0 Raw return: 10.0 Frames: 40\n'
                 'I1202 learner.py:2] Progress: 1000/10000 environment frames\n'
                 'I1202 learner.py:3] Return: 30.0 Raw return: 1.0 Frames: 9 Env id: 1 '
                 '(training) Iteration: 2\n'
                 'I1202 learner.py:3] Return: 99.0 Raw return: 1.0 Frames: 9 Env id: 3 '
                 '(eval) Iteration: 2\n'
                 'I1202 learner.py:4] Progress: 2000/10')  # Incomplete last line.
  follower, progress = progress_monitor.LogFollower(str(log)), progress_monitor.Progress()
  assert progress.line().startswith('waiting')
  progress.update(follower.new_lines(), now=100.)
  assert progress.frames == 1000 and list(progress.returns) == [10., 30.]
  with open(log, 'a') as f:
    f.write('000 environment frames\n')
  progress.update(follower.new_lines(), now=110.)
  line = progress.line()
  assert 'frames 2,000/10,000 (20.0%)' in line
  assert '100 frames/s' in line
  assert 'return 20.00 (last 2 episodes)' in line
  assert 'ETA 0h01m20s' in line
