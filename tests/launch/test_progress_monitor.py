"""Tests of the progress line that run_local.sh shows."""

import subprocess
import sys

import pytest

from seed_rl.launch import progress_monitor

pytestmark = pytest.mark.timeout(30)


def test_progress_line_from_learner_log(tmp_path):
  log = tmp_path / 'learner.log'
  log.write_text('I1202 learner.py:1] Return: 10.0 Raw return: 10.0 Frames: 40 Env id: 0\n'
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
  assert 'return 20.00 (mean of the last 2 episodes)' in line
  assert 'ETA 0h01m20s' in line


def test_episode_lines_that_count_more_episodes_stand_for_each_of_them():
  progress = progress_monitor.Progress(num_returns=5)
  progress.update([
      'I1204 episodes.py:1] Return: 9.000000 Raw return: 9.000000 Frames: 9 Env id: 0 '
      '(training) Iteration: 3 (+3 more episodes since the last line: mean return 5.000000, '
      'mean raw return 5.000000, mean frames 5.0)',
      'I1204 episodes.py:1] Return: 1e+02 Raw return: 1.0 Frames: 9 Env id: 4 (eval) '
      'Iteration: 3 (+9 more episodes since the last line: mean return 7.0, mean raw return '
      '7.0, mean frames 2.5)'], now=1.)
  assert list(progress.returns) == [5., 5., 5., 9.]  # Evaluation episodes are not counted.
  log = ('x] Return: -2.5 Raw return: 1 Frames: 3 (eval) (+2 more episodes since the last '
         'line: mean return 1.5, mean raw return 2.0, mean frames 4.5)\n'
         'x] Return: nan Raw return: 1 Frames: 8 (training)\n')
  assert progress_monitor.parse_episodes(log, 'eval') == [(1.5, 2., 4.5)] * 2 + [(-2.5, 1., 3.)]
  assert progress_monitor.parse_episode_returns(log, 'eval') == [1.5, 1.5, -2.5]


def test_the_line_says_when_its_returns_are_of_exploring_episodes():
  training = ('I1204 episodes.py:1] Return (exploring, epsilon-greedy): 3.000000 Raw return: '
              '30.000000 Frames: 9 Env id: 0 (training) Iteration: 3 (+1 more episodes since the '
              'last line: mean return 1.000000, mean raw return 10.000000, mean frames 5.0)')
  evaluation = ('I1204 episodes.py:1] Return: 7.000000 Raw return: 70.000000 Frames: 9 Env id: '
                '4 (eval) Iteration: 3')
  progress = progress_monitor.Progress()
  progress.update([training, evaluation, 'I1204 runtime.py:1] Progress: 100/1000 environment '
                   'frames'], now=1.)
  assert 'return 2.00 (mean of the last 2 exploring episodes, epsilon-greedy)' in progress.line()
  # The scripts that read the episodes read the new lines as they read the old ones.
  log = f'{training}\n{evaluation}\n'
  assert progress_monitor.parse_episodes(log, 'training') == [(1., 10., 5.), (3., 30., 9.)]
  assert progress_monitor.parse_episode_returns(log, 'eval') == [7.]
  assert progress.exploration == 'epsilon-greedy'  # The evaluation line after it changes nothing.
  progress.update(['I1204 episodes.py:1] Return: 5.0 Raw return: 5.0 Frames: 9 Env id: 1 '
                   '(training) Iteration: 4'], now=2.)
  assert progress.exploration is None
  assert 'return 3.00 (mean of the last 3 episodes)' in progress.line()


def test_the_line_says_what_the_first_training_step_waits_for():
  progress = progress_monitor.Progress()
  progress.update(['I1204 runtime.py:1] Waiting for the first training step: replay '
                   '1,234/5,000 unrolls'], now=1.)
  assert progress.line() == 'waiting for the first training step: replay 1,234/5,000 unrolls'
  progress.update(['W1204 starvation.py:1] Inference starved for 12 s: a batch runs only '
                   'with --inference_batch_size=2 rows'], now=2.)
  assert 'inference starved' in progress.line()
  progress.update(['I1204 starvation.py:1] Inference batches fill again: training goes on.',
                   'I1204 runtime.py:1] Progress: 100/1000 environment frames'], now=3.)
  assert progress.line().startswith('frames 100/1,000') and 'starved' not in progress.line()


def test_the_monitor_ends_with_the_learners_finished_line(tmp_path):
  log = tmp_path / 'learner.log'
  log.write_text('I1204 runtime.py:1] Progress: 100/100 environment frames\n'
                 'I1204 runtime.py:2] Training finished at iteration 5 (100 environment frames):'
                 ' the frame budget is spent; checkpoint /x/ckpt-5\n')
  result = subprocess.run([sys.executable, '-m', 'seed_rl.launch.progress_monitor', '--log',
                           str(log), '--period=0.1'], capture_output=True, text=True, timeout=20)
  assert result.returncode == progress_monitor.EXIT_TRAINING_FINISHED  # What run_local.sh reads.
  assert result.stdout.strip().splitlines()[-1] == (
      'Training finished at iteration 5 (100 environment frames): the frame budget is spent; '
      'checkpoint /x/ckpt-5')


def test_the_monitor_ends_with_status_0_when_the_learner_exits_before_finishing(tmp_path):
  log = tmp_path / 'learner.log'
  log.write_text('I1204 runtime.py:1] Progress: 50/100 environment frames\n')
  learner = subprocess.Popen(['true'])
  learner.wait()
  result = subprocess.run([sys.executable, '-m', 'seed_rl.launch.progress_monitor', '--log',
                           str(log), f'--pid={learner.pid}', '--period=0.1'],
                          capture_output=True, text=True, timeout=20)
  assert result.returncode == 0, result.stderr
