"""bench/atari_learning_curve.py: the run_local.sh command it runs, and its report of a run's
evaluation curve (real TensorBoard event files)."""

import csv
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from bench import atari_learning_curve
from seed_rl import plot

pytestmark = pytest.mark.timeout(60)


def _write_eval_returns(logdir: pathlib.Path, points) -> None:
  """A learner's event file with `eval/episode_return` at (step, value) points."""
  writer = tf.summary.create_file_writer(str(logdir))
  with writer.as_default():
    for step, value in points:
      tf.summary.scalar(atari_learning_curve.TAG, value, step=step)
  writer.close()


def _run(steps, values, minutes) -> plot.Run:
  return plot.Run('/logs/run', 'run', atari_learning_curve.TAG, np.array(steps, np.int64),
                  1000. + 60. * np.array(minutes, np.float64), np.array(values, np.float64),
                  1000.)


def test_crossings_are_the_first_windowed_means_at_the_thresholds():
  # Means of 2: -21, -10.5 (at 200), 0.5 (at 300: first >= 0), 6, 15.5 (at 500), 12.
  run = _run([100, 200, 300, 400, 500, 600], [-21., 0., 1., 11., 20., 4.],
             [1., 2., 3., 4., 5., 6.])
  crossings = atari_learning_curve.crossings(run, window=2)
  assert crossings == [atari_learning_curve.Crossing(0., 300, 3.),
                       atari_learning_curve.Crossing(15., 500, 5.)]


def test_a_mean_of_fewer_episodes_than_the_window_crosses_nothing():
  # One lucky first episode: its mean over the window would need two more.
  run = _run([100, 200, 300], [21., -21., -21.], [1., 2., 3.])
  assert [c.frames for c in atari_learning_curve.crossings(run, window=3)] == [None, None]
  assert [c.frames for c in atari_learning_curve.crossings(run, window=1)] == [100, 100]


def test_report_writes_the_smoothed_curve_and_the_crossings(tmp_path):
  logdir = tmp_path / 'run'
  _write_eval_returns(logdir, [(1000, -21.), (2000, -19.), (3000, 5.), (4000, 17.),
                               (5000, 19.)])
  out = tmp_path / 'curve'
  text = atari_learning_curve.report(str(logdir), window=2, out=str(out))
  lines = text.splitlines()
  assert '5 evaluation episodes up to 5,000 training frames, last mean of 2: 18.00' in lines[0]
  assert lines[1].startswith('mean of 2 >= +0: 4,000 frames, ')
  assert lines[2].startswith('mean of 2 >= +15: 5,000 frames, ')
  assert (tmp_path / 'curve.png').stat().st_size > 0
  with open(tmp_path / 'curve.csv') as f:
    rows = list(csv.DictReader(f))
  # Smoothed over 2 episodes: the first point alone, then means of two.
  assert [(int(row['x']), float(row['mean'])) for row in rows] == [
      (1000, -21.), (2000, -20.), (3000, -7.), (4000, 11.), (5000, 18.)]


def test_report_says_when_a_threshold_is_not_reached(tmp_path):
  logdir = tmp_path / 'run'
  _write_eval_returns(logdir, [(1000, -21.), (2000, -20.)])
  text = atari_learning_curve.report(str(logdir), window=1, out=None)
  assert 'mean of 1 >= +0: not reached' in text
  assert not (tmp_path / 'curve.png').exists()


def test_a_run_without_evaluation_episodes_is_an_error_and_not_reached(tmp_path):
  logdir = tmp_path / 'run'
  writer = tf.summary.create_file_writer(str(logdir))
  with writer.as_default():
    tf.summary.scalar('episode_return', -21., step=1)
  writer.close()
  with pytest.raises(plot.PlotError, match='eval/episode_return'):
    atari_learning_curve.report(str(logdir), window=1, out=None)
  assert not atari_learning_curve.reached(str(logdir), window=1, target=-100.)
  assert atari_learning_curve.main(['--agent=r2d2', '--report_only',
                                    f'--logdir={logdir}']) == 2


def test_the_run_is_run_local_with_the_one_machine_flags_and_extra_flags():
  args, extra = atari_learning_curve.parse_args(['--agent=r2d2', '--seed=3', '--frame_budget=5e6',
                                                 '--learning_rate=1e-4'])
  command = atari_learning_curve.run_local_command(args, extra)
  assert command[1:5] == ['atari', 'r2d2', '2', '8']
  assert command[0].endswith('run_local.sh')
  flagfile = atari_learning_curve.flagfile('r2d2')
  assert flagfile.is_file()
  assert command[5:] == [f'--flagfile={flagfile}', '--logdir=/tmp/atari_r2d2_seed3',
                         '--total_environment_frames=5000000', '--seed=3',
                         '--learning_rate=1e-4']
  assert args.out == '/tmp/atari_r2d2_seed3/curve'


@pytest.mark.parametrize('argv, message', [
    (['--agent=r2d2', 'extra'], 'give --flag=value'),
    (['--agent=r2d2', '--window=0'], '--window must be at least 1'),
    (['--agent=dqn'], 'invalid choice'),
])
def test_bad_arguments_are_one_line(argv, message, capsys):
  with pytest.raises(SystemExit):
    atari_learning_curve.parse_args(argv)
  assert message in capsys.readouterr().err
