"""Tests of `python -m seed_rl.plot` on real event files written by tf.summary."""

import csv
import os
import pathlib
import subprocess
import sys

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import plot
from seed_rl.common.learner_runtime import run_record

pytestmark = pytest.mark.timeout(120)

ROOT = pathlib.Path(__file__).resolve().parents[1]

# (step, episode_return) of each seed. vtrace/seed1 is written by two learners one after the
# other (a restart): steps 0-200 in one event file, 300-400 in another.
VTRACE_SEED1 = [(0, 0.), (100, 10.), (200, 40.), (300, 20.), (400, 30.)]
VTRACE_SEED2 = [(50, 5.), (150, 25.), (250, 15.), (350, 35.), (450, 15.)]
R2D2_SEED1 = [(0, 1.), (200, 3.), (400, 5.), (600, 7.)]
R2D2_SEED2 = [(100, 2.), (300, 6.), (500, 4.), (700, 8.)]

# vtrace's seeds share frames 50-400; the grid is every step of either seed in that range.
# seed1 is interpolated at odd multiples of 50, seed2 at multiples of 100, e.g. at 250 seed1 is
# halfway between 40 (200) and 20 (300) = 30, seed2 is 15: mean 22.5, min 15, max 30.
VTRACE_CURVE = {  # x: (mean, min, max)
    50: (5., 5., 5.),
    100: (12.5, 10., 15.),
    150: (25., 25., 25.),
    200: (30., 20., 40.),
    250: (22.5, 15., 30.),
    300: (22.5, 20., 25.),
    350: (30., 25., 35.),
    400: (27.5, 25., 30.),
}
# r2d2's seeds share 100-600: at 200 seed2 is 4 (between 2 and 6), at 500 seed1 is 6.
R2D2_CURVE = {100: (2., 2., 2.), 200: (3.5, 3., 4.), 300: (5., 4., 6.), 400: (5., 5., 5.),
              500: (5., 4., 6.), 600: (6.5, 6., 7.)}


def _write(logdir: pathlib.Path, points, eval_returns: bool = False) -> None:
  """One learner's event file: episode_return, losses/total (and eval/episode_return)."""
  writer = tf.summary.create_file_writer(str(logdir))
  with writer.as_default():
    for step, value in points:
      tf.summary.scalar('episode_return', value, step=step)
      tf.summary.scalar('losses/total', -value, step=step)
      if eval_returns:
        tf.summary.scalar('eval/episode_return', 2 * value, step=step)
  writer.close()


@pytest.fixture(scope='module')
def runs(tmp_path_factory) -> pathlib.Path:
  """runs/{vtrace,r2d2}/seed{1,2} learner logdirs (plus checkpoint-like clutter)."""
  root = tmp_path_factory.mktemp('runs')
  _write(root / 'vtrace' / 'seed1', VTRACE_SEED1[:3])
  _write(root / 'vtrace' / 'seed1', VTRACE_SEED1[3:])  # The restarted learner's file.
  _write(root / 'vtrace' / 'seed2', VTRACE_SEED2)
  _write(root / 'r2d2' / 'seed1', R2D2_SEED1, eval_returns=True)
  _write(root / 'r2d2' / 'seed2', R2D2_SEED2)
  (root / 'vtrace' / 'seed2' / 'logs').mkdir()
  (root / 'vtrace' / 'seed2' / 'logs' / 'learner.log').write_text('not an event file\n')
  return root


def _logdirs(runs: pathlib.Path, *names: str) -> list:
  return [str(runs / name) for name in names]


ALL = ('vtrace/seed1', 'vtrace/seed2', 'r2d2/seed1', 'r2d2/seed2')


def _cli(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, '-m', 'seed_rl.plot', *args], cwd=ROOT,
                        capture_output=True, text=True, timeout=100,
                        env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _read_csv(path) -> dict:
  """{group: {x: (mean, min, max, n_seeds)}} of a CSV written by --csv."""
  with open(path, newline='') as f:
    rows = list(csv.DictReader(f))
  assert rows and list(rows[0]) == ['group', 'x', 'mean', 'min', 'max', 'n_seeds', 'env',
                                    'agent', 'entry_point', 'flags']
  table = {}
  for row in rows:
    table.setdefault(row['group'], {})[float(row['x'])] = (
        float(row['mean']), float(row['min']), float(row['max']), int(row['n_seeds']))
  return table


def test_a_restarted_learner_s_event_files_merge_into_one_run(runs):
  assert len(plot.find_event_files(str(runs / 'vtrace' / 'seed1'))) == 2
  (run,) = plot.load_runs(_logdirs(runs, 'vtrace/seed1'))
  assert run.label == 'vtrace'
  assert run.steps.tolist() == [step for step, _ in VTRACE_SEED1]
  assert run.values.tolist() == [value for _, value in VTRACE_SEED1]
  assert np.all(np.diff(run.wall_times) >= 0) and run.start_time <= run.wall_times[0]


def test_csv_has_mean_min_max_over_seeds_grouped_by_parent(runs, tmp_path):
  result = _cli(*_logdirs(runs, *ALL), '--csv', str(tmp_path / 'curves.csv'))
  assert result.returncode == 0, result.stderr
  table = _read_csv(tmp_path / 'curves.csv')
  assert list(table) == ['vtrace', 'r2d2']
  assert table['vtrace'] == {x: (*row, 2) for x, row in VTRACE_CURVE.items()}
  assert table['r2d2'] == {x: (*row, 2) for x, row in R2D2_CURVE.items()}


def test_label_by_name_plots_each_logdir_alone(runs, tmp_path):
  result = _cli(*_logdirs(runs, 'vtrace/seed1', 'vtrace/seed2'), '--label_by', 'name',
                '--csv', str(tmp_path / 'curves.csv'))
  assert result.returncode == 0, result.stderr
  table = _read_csv(tmp_path / 'curves.csv')
  assert table == {
      'seed1': {step: (value, value, value, 1) for step, value in VTRACE_SEED1},
      'seed2': {step: (value, value, value, 1) for step, value in VTRACE_SEED2}}


def test_label_by_name_keeps_logdirs_with_the_same_name_apart(runs):
  loaded = plot.load_runs(_logdirs(runs, 'vtrace/seed1', 'r2d2/seed1'), label_by='name')
  assert [run.label for run in loaded] == _logdirs(runs, 'vtrace/seed1', 'r2d2/seed1')
  assert [curve.n_seeds for curve in plot.curves(loaded)] == [1, 1]


def _minutes_of(logdir: pathlib.Path, tag: str = 'episode_return') -> list:
  """Minutes since the first event of each `tag` value, read back by TensorFlow itself."""
  events = [event for path in sorted(logdir.glob('events.out.tfevents.*'))
            for event in tf.compat.v1.train.summary_iterator(str(path))]
  start = min(event.wall_time for event in events)
  walls = sorted(event.wall_time for event in events
                 if any(value.tag == tag for value in event.summary.value))
  return [(wall - start) / 60. for wall in walls]


def test_x_time_is_minutes_since_the_run_s_first_event(runs, tmp_path):
  result = _cli(*_logdirs(runs, 'vtrace/seed1'), '--x', 'time', '--csv',
                str(tmp_path / 'curves.csv'))
  assert result.returncode == 0, result.stderr
  (curve,) = _read_csv(tmp_path / 'curves.csv').values()
  expected = _minutes_of(runs / 'vtrace' / 'seed1')
  assert list(curve) == pytest.approx(expected, abs=1e-9)
  assert [row[0] for row in curve.values()] == [value for _, value in VTRACE_SEED1]
  assert 0 <= min(curve) and max(curve) < 2  # Written in seconds, in minutes.


def test_smoothing_averages_each_run_over_n_points_before_interpolating(runs, tmp_path):
  # Trailing means of 2: seed1 0, 5, 25, 30, 25 at 0..400; seed2 5, 15, 20, 25, 25 at 50..450.
  result = _cli(*_logdirs(runs, 'vtrace/seed1', 'vtrace/seed2'), '--smoothing', '2', '--csv',
                str(tmp_path / 'curves.csv'))
  assert result.returncode == 0, result.stderr
  curve = _read_csv(tmp_path / 'curves.csv')['vtrace']
  assert curve[50] == (3.75, 2.5, 5., 2)
  assert curve[100] == (7.5, 5., 10., 2)
  assert curve[200] == (21.25, 17.5, 25., 2)
  assert curve[400] == (25., 25., 25., 2)


def test_smooth_is_a_trailing_moving_average():
  np.testing.assert_allclose(plot.smooth(np.array([0., 10., 40., 20., 30.]), 3),
                             [0., 5., 50. / 3, 70. / 3, 30.])
  assert plot.smooth(np.array([1., 2.]), 1).tolist() == [1., 2.]


def _run(label, steps, values, wall_times=None, start_time=0.) -> plot.Run:
  steps = np.array(steps, np.int64)
  wall_times = np.array(steps if wall_times is None else wall_times, np.float64)
  return plot.Run('/logs/' + label, label, 'episode_return', steps, wall_times,
                  np.array(values, np.float64), start_time)


def test_x_time_puts_seeds_on_their_common_minutes():
  # Minutes since each run's start: a at 0, 1, 3; b at 0.5, 1.5, 2.5.
  a = _run('g', [0, 100, 200], [0., 10., 20.], [1000., 1060., 1180.], start_time=1000.)
  b = _run('g', [0, 100, 200], [5., 5., 5.], [2030., 2090., 2150.], start_time=2000.)
  (curve,) = plot.curves([a, b], x='time')
  assert curve.x.tolist() == [0.5, 1., 1.5, 2.5]
  assert curve.mean.tolist() == [5., 7.5, 8.75, 11.25]
  assert curve.min.tolist() == [5., 5., 5., 5.]
  assert curve.max.tolist() == [5., 10., 12.5, 17.5]


def test_values_logged_at_the_same_step_are_averaged():
  (curve,) = plot.curves([_run('a', [0, 0, 100], [1., 3., 5.])])
  assert curve.x.tolist() == [0., 100.] and curve.mean.tolist() == [2., 5.]


def test_points_resamples_evenly():
  (curve,) = plot.curves([_run('a', [0, 100], [0., 10.]), _run('a', [0, 50, 100], [2., 2., 2.])],
                         points=5)
  assert curve.x.tolist() == [0., 25., 50., 75., 100.]
  assert curve.mean.tolist() == [1., 2.25, 3.5, 4.75, 6.]


def test_seeds_without_common_x_are_an_error():
  with pytest.raises(plot.PlotError, match="group 'a' have no environment frames in common"):
    plot.curves([_run('a', [0, 100], [0., 1.]), _run('a', [200, 300], [0., 1.])])


def test_a_learner_restart_supersedes_the_values_after_its_checkpoint(tmp_path):
  # The first learner logged up to step 300, the second resumed from a checkpoint at 200.
  _write(tmp_path / 'run', [(0, 1.), (100, 2.), (200, 3.), (300, 4.)])
  _write(tmp_path / 'run', [(200, 30.), (300, 40.), (400, 50.)])
  (run,) = plot.load_runs([str(tmp_path / 'run')])
  assert run.steps.tolist() == [0, 100, 200, 300, 400]
  assert run.values.tolist() == [1., 2., 30., 40., 50.]


def test_runs_in_subdirectories_of_a_logdir_are_merged_whole(tmp_path, caplog):
  # Written one after the other, but in different directories: not a restart.
  _write(tmp_path / 'run' / 'a', [(0, 1.), (200, 3.)])
  _write(tmp_path / 'run' / 'b', [(100, 2.), (300, 4.)])
  (run,) = plot.load_runs([str(tmp_path / 'run')])
  assert run.steps.tolist() == [0, 100, 200, 300]
  assert run.values.tolist() == [1., 2., 3., 4.]
  # Without run records nothing tells whether they are one run or several: it says so.
  assert (f'the event files of 2 directories under {tmp_path / "run"} are merged into one run'
          in caplog.text)


def test_a_truncated_last_record_is_ignored_with_a_warning(tmp_path, caplog):
  # A learner killed in the middle of a write, or still writing.
  _write(tmp_path / 'run', [(0, 1.), (100, 2.), (200, 3.)])
  (path,) = plot.find_event_files(str(tmp_path / 'run'))
  with open(path, 'r+b') as f:
    f.truncate(os.path.getsize(path) - 3)
  # The last record, losses/total at step 200, lost its end.
  (run,) = plot.load_runs([str(tmp_path / 'run')], tag='losses/total')
  assert run.values.tolist() == [-1., -2.]
  (run,) = plot.load_runs([str(tmp_path / 'run')])
  assert run.values.tolist() == [1., 2., 3.]
  assert f'{path} ends inside a record at byte ' in caplog.text


def test_summary_skips_nan_for_the_best_mean():
  curve = plot.Curve('g', np.array([0., 1., 2.]), np.array([1., 3., np.nan]),
                     np.array([1., 3., np.nan]), np.array([1., 3., np.nan]), 1)
  assert plot.format_summary([curve]).splitlines()[1] == (
      'g: 1 seed, last mean nan at 2 environment frames, best mean 3 at 1 environment frames')


def test_png_has_one_line_and_band_per_group(runs, tmp_path):
  out = tmp_path / 'curves.png'
  result = _cli(*_logdirs(runs, *ALL), '--out', str(out), '--title', 'Pong')
  assert result.returncode == 0, result.stderr
  assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
  import matplotlib.image  # pylint: disable=g-import-not-at-top
  image = matplotlib.image.imread(str(out))
  assert image.shape == (500, 800, 4)  # 8 x 5 inches at 100 dpi.
  assert len(np.unique(image.reshape(-1, 4), axis=0)) > 10  # Not blank.


def test_figure_labels_axes_and_counts_seeds_in_the_legend(runs, tmp_path):
  loaded = plot.load_runs(_logdirs(runs, *ALL[:3]), tag='losses/total')
  figure = plot.plot_curves(plot.curves(loaded), str(tmp_path / 'a.png'), tag='losses/total')
  (axes,) = figure.axes
  assert axes.get_xlabel() == 'environment frames' and axes.get_ylabel() == 'losses/total'
  assert [t.get_text() for t in axes.get_legend().get_texts()] == ['vtrace (2 seeds)',
                                                                   'r2d2 (1 seed)']
  figure = plot.plot_curves(plot.curves(loaded[:1], x='time'), str(tmp_path / 'b.png'),
                            x='time')
  assert figure.axes[0].get_xlabel() == 'minutes'


def test_without_out_or_csv_prints_a_summary(runs):
  result = _cli(*_logdirs(runs, *ALL))
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines() == [
      'episode_return, mean over seeds, by environment frames:',
      'vtrace: 2 seeds, last mean 27.5 at 400 environment frames, '
      'best mean 30 at 200 environment frames',
      'r2d2: 2 seeds, last mean 6.5 at 600 environment frames, '
      'best mean 6.5 at 600 environment frames']


def test_any_scalar_tag_and_runs_without_it_are_skipped(runs, caplog):
  loaded = plot.load_runs(_logdirs(runs, 'r2d2/seed1', 'r2d2/seed2'), tag='eval/episode_return')
  assert [run.logdir for run in loaded] == _logdirs(runs, 'r2d2/seed1')
  assert loaded[0].values.tolist() == [2., 6., 10., 14.]
  assert 'r2d2/seed2 has no scalar' in caplog.text


def test_reading_and_plotting_do_not_import_tensorflow(runs, tmp_path):
  code = ('import sys; from seed_rl import plot; '
          f'assert plot.main({_logdirs(runs, *ALL)!r} + ["--out", {str(tmp_path / "a.png")!r}]) '
          '== 0; assert "tensorflow" not in sys.modules, "tensorflow imported"')
  result = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True,
                          text=True, timeout=100)
  assert result.returncode == 0, result.stderr


@pytest.mark.parametrize('case, message', [
    ('missing', 'seed_rl.plot: error: logdir {path} does not exist'),
    ('empty', 'seed_rl.plot: error: no TensorBoard event files (events.out.tfevents.*) under '
              '{path}'),
    ('tag', "seed_rl.plot: error: no run has the scalar tag 'nope'; tags found: "
            'episode_return, eval/episode_return, losses/total'),
])
def test_errors_are_one_line_and_exit_2(runs, tmp_path, case, message):
  path = tmp_path / case
  if case == 'empty':
    (path / 'logs').mkdir(parents=True)
    (path / 'logs' / 'learner.log').write_text('no events\n')
  args = [str(path)] if case != 'tag' else [*_logdirs(runs, *ALL), '--tag', 'nope']
  result = _cli(*args, '--csv', str(tmp_path / 'never.csv'))
  assert result.returncode == 2
  assert result.stderr.splitlines() == [message.format(path=path)]
  assert not result.stdout and not (tmp_path / 'never.csv').exists()


# Runs with a run record, written by the learners' own `run_record.write`.


def _create_environment(env_id, config):
  del env_id, config


def _learner_flags(**values) -> flags.FlagValues:
  """Flags as an entry point defines them, parsed from `--name=value` for each of `values`."""
  flag_values = flags.FlagValues()
  flags.DEFINE_string('logdir', '/tmp/agent', '', flag_values=flag_values)
  flags.DEFINE_string('server_address', 'localhost:8686', '', flag_values=flag_values)
  flags.DEFINE_integer('seed', None, '', flag_values=flag_values)
  flags.DEFINE_string('env_name', 'CartPole-v1', '', flag_values=flag_values)
  flags.DEFINE_float('learning_rate', 1e-3, '', flag_values=flag_values)
  flags.DEFINE_integer('num_envs', 4, '', flag_values=flag_values)
  flag_values(['learner'] + [f'--{name}={value}' for name, value in values.items()])
  return flag_values


def _recorded_run(logdir: pathlib.Path, points, agent: str = 'VTRACE', **flag_values) -> None:
  """A learner logdir: its event file and the run record it writes when it starts."""
  _write(logdir, points)
  config = _learner_flags(logdir=logdir, server_address=f'unix:{logdir}/learner.sock',
                          **flag_values)
  run_record.write(str(logdir), config, _create_environment, agent)


@pytest.fixture(scope='module')
def recorded(tmp_path_factory) -> pathlib.Path:
  """Runs with run records: agents/ (three agents on CartPole), envs/ (CartPole and two seeds of
  Acrobot), seeds/ (two seeds of one setup), lr/ (two learning rates)."""
  root = tmp_path_factory.mktemp('recorded')
  for agent in ('VTRACE', 'PPO', 'R2D2'):
    _recorded_run(root / 'agents' / f'gym_{agent.lower()}', R2D2_SEED1, agent)
  _recorded_run(root / 'envs' / 'cartpole', VTRACE_SEED2, env_name='CartPole-v1', seed=1)
  _recorded_run(root / 'envs' / 'acrobot_1', R2D2_SEED1, env_name='Acrobot-v1', seed=1)
  _recorded_run(root / 'envs' / 'acrobot_2', R2D2_SEED2, env_name='Acrobot-v1', seed=2)
  _recorded_run(root / 'seeds' / 'seed1', VTRACE_SEED1, seed=1)
  _recorded_run(root / 'seeds' / 'seed2', VTRACE_SEED2, seed=2, num_envs=4)
  _recorded_run(root / 'lr' / 'a_1', R2D2_SEED1, learning_rate=1e-3, seed=1)
  _recorded_run(root / 'lr' / 'a_2', R2D2_SEED2, learning_rate=1e-3, seed=2)
  _recorded_run(root / 'lr' / 'b_1', VTRACE_SEED1, learning_rate=3e-4, seed=1)
  return root


def _main(capsys, *args: str) -> tuple:
  """(exit status, stdout lines, stderr lines) of `python -m seed_rl.plot ARGS`, in process."""
  status = plot.main([str(arg) for arg in args])
  out, err = capsys.readouterr()
  return status, out.splitlines(), err.splitlines()


def _csv_identities(path) -> dict:
  """{group: (env, agent, entry_point, flags)} of a CSV written by --csv."""
  with open(path, newline='') as f:
    return {row['group']: (row['env'], row['agent'], row['entry_point'], row['flags'])
            for row in csv.DictReader(f)}


def test_runs_of_different_agents_are_curves_of_their_own(recorded, tmp_path, capsys):
  logdirs = [recorded / 'agents' / name for name in ('gym_vtrace', 'gym_ppo', 'gym_r2d2')]
  status, _, err = _main(capsys, *logdirs, '--csv', tmp_path / 'curves.csv')
  assert status == 0, err
  expected = {step: (value, value, value, 1) for step, value in R2D2_SEED1}
  assert _read_csv(tmp_path / 'curves.csv') == {
      'CartPole-v1 · VTRACE': expected, 'CartPole-v1 · PPO': expected,
      'CartPole-v1 · R2D2': expected}
  loaded = plot.load_runs(logdirs)
  entry_point = loaded[1].identity.entry_point  # The module that ran the learner: pytest here.
  assert entry_point and _csv_identities(tmp_path / 'curves.csv')['CartPole-v1 · PPO'] == (
      'CartPole-v1', 'PPO', entry_point, '')
  figure = plot.plot_curves(plot.curves(loaded), str(tmp_path / 'a.png'))
  (axes,) = figure.axes
  assert axes.get_title() == 'CartPole-v1'
  assert [t.get_text() for t in axes.get_legend().get_texts()] == [
      'CartPole-v1 · VTRACE (1 seed)', 'CartPole-v1 · PPO (1 seed)',
      'CartPole-v1 · R2D2 (1 seed)']


def test_label_by_parent_refuses_to_average_different_agents(recorded, tmp_path, capsys):
  logdirs = [recorded / 'agents' / name for name in ('gym_vtrace', 'gym_ppo')]
  status, out, err = _main(capsys, *logdirs, '--label_by', 'parent', '--csv',
                           tmp_path / 'never.csv')
  assert status == 2 and not out and not (tmp_path / 'never.csv').exists()
  assert err == [
      "seed_rl.plot: error: group 'agents' would average runs not known to be seeds of one "
      f'setup: {logdirs[0]} (CartPole-v1 · VTRACE), {logdirs[1]} (CartPole-v1 · PPO); plot '
      'them grouped by what they ran (without --label_by), each alone (--label_by name), or '
      'with separate commands']
  status, out, err = _main(capsys, *logdirs, '--label_by', 'name')
  assert status == 0, err
  assert out[1].startswith('gym_vtrace [CartPole-v1 · VTRACE]: 1 seed, last mean 7 ')
  assert out[2].startswith('gym_ppo [CartPole-v1 · PPO]: 1 seed, ')


def test_a_parent_of_runs_of_two_environments_plots_a_panel_each(recorded, tmp_path, capsys):
  loaded = plot.load_runs([str(recorded / 'envs')])
  assert sorted(run.logdir for run in loaded) == sorted(
      str(recorded / 'envs' / name) for name in ('acrobot_1', 'acrobot_2', 'cartpole'))
  figure = plot.plot_curves(plot.curves(loaded), str(tmp_path / 'a.png'), title='classic')
  assert [axes.get_title() for axes in figure.axes] == ['Acrobot-v1', 'CartPole-v1']
  assert [[t.get_text() for t in axes.get_legend().get_texts()] for axes in figure.axes] == [
      ['Acrobot-v1 · VTRACE (2 seeds)'], ['CartPole-v1 · VTRACE (1 seed)']]
  assert figure.get_suptitle() == 'classic'
  status, out, err = _main(capsys, recorded / 'envs')
  assert status == 0, err
  assert [line.split(':')[0] for line in out[1:]] == ['Acrobot-v1 · VTRACE',
                                                      'CartPole-v1 · VTRACE']


def test_seeds_of_one_setup_still_average_into_one_group(recorded, tmp_path, capsys):
  seeds = recorded / 'seeds'
  for logdirs in ([seeds], [seeds / 'seed1', seeds / 'seed2']):
    status, _, err = _main(capsys, *logdirs, '--csv', tmp_path / 'curves.csv')
    assert status == 0, err
    assert _read_csv(tmp_path / 'curves.csv') == {
        'CartPole-v1 · VTRACE': {x: (*row, 2) for x, row in VTRACE_CURVE.items()}}


def test_a_flag_that_differs_splits_groups_and_is_in_the_label(recorded, tmp_path, capsys):
  status, _, err = _main(capsys, recorded / 'lr', '--csv', tmp_path / 'curves.csv')
  assert status == 0, err
  fast, slow = ('CartPole-v1 · VTRACE · --learning_rate=0.001',
                'CartPole-v1 · VTRACE · --learning_rate=0.0003')
  assert _read_csv(tmp_path / 'curves.csv') == {
      fast: {x: (*row, 2) for x, row in R2D2_CURVE.items()},
      slow: {step: (value, value, value, 1) for step, value in VTRACE_SEED1}}
  assert _csv_identities(tmp_path / 'curves.csv')[slow][3] == '--learning_rate=0.0003'


def test_runs_without_a_record_are_never_averaged_with_recorded_ones(tmp_path, capsys):
  mixed = tmp_path / 'mixed'
  _recorded_run(mixed / 'seed1', VTRACE_SEED1, seed=1)
  _write(mixed / 'seed2', VTRACE_SEED2)  # A learner older than run records.
  status, _, err = _main(capsys, mixed / 'seed1', mixed / 'seed2', '--label_by', 'parent')
  assert status == 2
  assert err == [
      "seed_rl.plot: error: group 'mixed' would average runs not known to be seeds of one "
      f'setup: {mixed / "seed1"} (CartPole-v1 · VTRACE), {mixed / "seed2"} (no run record); '
      'plot them grouped by what they ran (without --label_by), each alone (--label_by name), '
      'or with separate commands']
  status, out, err = _main(capsys, mixed / 'seed1', mixed / 'seed2')
  assert status == 0, err
  assert [line.split(':')[0] for line in out[1:]] == ['CartPole-v1 · VTRACE', 'mixed']
  # As a parent, it cannot tell which runs seed2's event files belong to.
  status, _, err = _main(capsys, mixed)
  assert status == 2
  assert err == [f'seed_rl.plot: error: {mixed / "seed2"} holds event files but no run record '
                 f'(runs.jsonl), unlike the run logdirs beside it under {mixed}: name the '
                 f'logdirs to plot instead of {mixed}']


def test_runs_whose_record_names_no_environment_have_a_panel_of_their_own(tmp_path):
  """A record without `learner_flags.txt` names no environment: its panel says so, apart from
  that of runs without a record."""
  _recorded_run(tmp_path / 'cartpole', VTRACE_SEED1, seed=1)
  _write(tmp_path / 'flagless', VTRACE_SEED2)
  run_record.write(str(tmp_path / 'flagless'), None, _create_environment, 'PPO')
  assert not (tmp_path / 'flagless' / run_record.FLAGS_FILE).exists()
  _write(tmp_path / 'old', R2D2_SEED1)  # A learner older than run records.
  loaded = plot.load_runs([str(tmp_path / name) for name in ('cartpole', 'flagless', 'old')])
  figure = plot.plot_curves(plot.curves(loaded), str(tmp_path / 'a.png'))
  assert [axes.get_title() for axes in figure.axes] == [
      'CartPole-v1', plot.NO_ENV_PANEL, plot.NO_RECORD_PANEL]
  assert plot.NO_ENV_PANEL == 'environment not recorded'
