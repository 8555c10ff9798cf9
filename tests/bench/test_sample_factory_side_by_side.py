"""bench/sample_factory_side_by_side.py: Sample Factory's log read as its runner writes it, the
rates over a window, the medians and ratios, and both sides' command lines. With Sample
Factory's virtualenv (bench/sample_factory_venv.sh) present, its parser takes the command line
and a short run of its V-trace APPO trains; without it those two tests skip."""

import datetime
import json
import math
import os
import pathlib
import subprocess

import pytest

from bench import end_to_end
from bench import sample_factory_side_by_side as side_by_side
from tests.processes import ROOT

# Lines 99-106 of sf_log.txt of a run of this bench (Sample Factory 2.1.1, 2026-12-07,
# `--rounds 1 --seconds 15 --warmup_seconds 10`), as written: two reports before the learner's
# first step, a worker's line between them, then five reports of training.
SF_LOG = (
    '[2026-12-07 15:19:18,848][02901] Decorrelating experience for 192 frames...\n'
    '[2026-12-07 15:19:19,089][02594] Fps is (10 sec: 0.0, 60 sec: 0.0, 300 sec: 0.0). '
    'Total num frames: 0. Throughput: 0: 0.0. Samples: 0. Policy #0 lag: (min: -1.0, avg: -1.0, '
    'max: -1.0)\n'
    '[2026-12-07 15:19:19,854][02901] Decorrelating experience for 224 frames...\n'
    '[2026-12-07 15:19:24,095][02594] Fps is (10 sec: 0.0, 60 sec: 0.0, 300 sec: 0.0). '
    'Total num frames: 0. Throughput: 0: 68.4. Samples: 816. Policy #0 lag: (min: -1.0, avg: '
    '-1.0, max: -1.0)\n'
    '[2026-12-07 15:19:29,100][02594] Fps is (10 sec: 409.2, 60 sec: 241.5, 300 sec: 241.5). '
    'Total num frames: 4096. Throughput: 0: 134.2. Samples: 2272. Policy #0 lag: (min: 0.0, avg: '
    '0.0, max: 0.0)\n'
    '[2026-12-07 15:19:34,089][02594] Fps is (10 sec: 819.6, 60 sec: 373.4, 300 sec: 373.3). '
    'Total num frames: 8192. Throughput: 0: 161.4. Samples: 3536. Policy #0 lag: (min: 0.0, avg: '
    '0.0, max: 0.0)\n'
    '[2026-12-07 15:19:39,089][02594] Fps is (10 sec: 820.1, 60 sec: 456.4, 300 sec: 456.0). '
    'Total num frames: 12288. Throughput: 0: 163.6. Samples: 4400. Policy #0 lag: (min: 0.0, avg: '
    '0.7, max: 1.0)\n'
    '[2026-12-07 15:19:44,089][02594] Fps is (10 sec: 1228.8, 60 sec: 641.7, 300 sec: 641.1). '
    'Total num frames: 20480. Throughput: 0: 172.4. Samples: 5496. Policy #0 lag: (min: 0.0, avg: '
    '0.5, max: 1.0)\n'
    '[2026-12-07 15:19:49,091][02594] Fps is (10 sec: 1228.6, 60 sec: 665.7, 300 sec: 665.1). '
    'Total num frames: 24576. Throughput: 0: 179.7. Samples: 6624. Policy #0 lag: (min: 0.0, avg: '
    '0.5, max: 1.0)\n')

SF_VENV_PYTHON = ROOT / '.venv-sample-factory' / 'bin' / 'python'
needs_sample_factory = pytest.mark.skipif(
    not SF_VENV_PYTHON.exists(),
    reason='Sample Factory\'s virtualenv is absent (bench/sample_factory_venv.sh makes it)')


def _at(second: int, millisecond: int) -> float:
  """15:19:SS.mmm on 2026-12-07 in this machine's time zone, in seconds since the epoch."""
  return datetime.datetime(2026, 12, 7, 15, 19, second, millisecond * 1000).timestamp()


def test_reads_each_report_of_sample_factorys_log():
  reports = side_by_side.sample_factory_reports(SF_LOG)
  assert reports == [(_at(19, 89), 0, 0), (_at(24, 95), 0, 816), (_at(29, 100), 4096, 2272),
                     (_at(34, 89), 8192, 3536), (_at(39, 89), 12288, 4400),
                     (_at(44, 89), 20480, 5496), (_at(49, 91), 24576, 6624)]
  assert side_by_side.sample_factory_reports('no report\n') == []


def test_rate_is_the_slope_over_the_window_only():
  frames = [(t, f) for t, f, _ in side_by_side.sample_factory_reports(SF_LOG)]
  # The training reports, 15:19:29.100 to 15:19:49.091: (24,576 - 4,096) frames in 19.991 s.
  assert side_by_side.window_rate(frames, _at(29, 0), _at(50, 0)) == pytest.approx(
      20480 / 19.991, rel=1e-6)  # Epoch seconds hold about 0.2 µs.
  # A window ending before the last reports leaves them out.
  assert side_by_side.window_rate(frames, _at(29, 0), _at(40, 0)) == pytest.approx(
      8192 / 9.989, rel=1e-6)
  assert math.isnan(side_by_side.window_rate(frames, _at(45, 0), _at(50, 0)))  # One report.
  assert math.isnan(side_by_side.window_rate([], 0., 1.))


def test_medians_and_ratios_of_the_rounds():
  def rates(trained, acted):
    return {'trained_frames_per_sec': trained, 'acted_frames_per_sec': acted, 'cores_busy': 2.}

  rounds = [{'sample_factory': rates(2000., 2100.), 'seed_rl': rates(5000., 4800.)},
            {'sample_factory': rates(2600., 2500.), 'seed_rl': rates(4000., 4400.)},
            {'sample_factory': rates(2200., 2300.), 'seed_rl': rates(6000., 6200.)}]
  summary = side_by_side.summarize(rounds)
  assert summary['trained_frames_per_sec'] == {'sample_factory': 2200., 'seed_rl': 5000.,
                                               'ratio': pytest.approx(5000. / 2200.)}
  assert summary['acted_frames_per_sec'] == {'sample_factory': 2300., 'seed_rl': 4800.,
                                             'ratio': pytest.approx(4800. / 2300.)}
  # With two rounds, the mean of the two.
  assert side_by_side.summarize(rounds[:2])['trained_frames_per_sec'] == {
      'sample_factory': 2300., 'seed_rl': 4500., 'ratio': pytest.approx(4500. / 2300.)}


def _flag_values(flags):
  return dict(flag[2:].split('=', 1) for flag in flags)


def test_sample_factory_gets_the_same_shapes_and_v_trace():
  args = side_by_side.parse_args(['--sample_factory_arg=--worker_num_splits=2'])
  flags = side_by_side.sample_factory_flags(args, pathlib.Path('/tmp/sf'))
  values = _flag_values(flags)
  assert {key: values[key] for key in [
      'env', 'num_workers', 'num_envs_per_worker', 'rollout', 'recurrence', 'batch_size',
      'num_batches_per_epoch', 'num_epochs', 'with_vtrace', 'normalize_returns', 'async_rl',
      'env_frameskip', 'device', 'train_dir']} == {
          'env': 'atari_pong', 'num_workers': '2', 'num_envs_per_worker': '8', 'rollout': '32',
          'recurrence': '32', 'batch_size': '1024', 'num_batches_per_epoch': '1',
          'num_epochs': '1', 'with_vtrace': 'True', 'normalize_returns': 'False',
          'async_rl': 'True', 'env_frameskip': '4', 'device': 'cpu', 'train_dir': '/tmp/sf'}
  assert flags[-1] == '--worker_num_splits=2'  # The caller's own, last: they win.
  small = side_by_side.parse_args(['--num_actors=1', '--env_batch_size=4', '--unroll_length=8',
                                   '--batch_size=2', '--game=Breakout'])
  values = _flag_values(side_by_side.sample_factory_flags(small, pathlib.Path('/tmp/sf')))
  assert (values['env'], values['num_workers'], values['num_envs_per_worker'],
          values['rollout'], values['recurrence'], values['batch_size']) == (
              'atari_breakout', '1', '4', '8', '8', '16')


def test_seed_rl_gets_the_same_shapes_with_its_defaults(tmp_path):
  args = side_by_side.seed_rl_args(side_by_side.parse_args(['--seconds=45',
                                                            '--warmup_seconds=5']))
  assert (args.agent, args.network, args.stack_size, args.transport) == (
      'vtrace', 'nature', 4, 'shm')
  assert (args.seconds, args.warmup_seconds) == (45., 5.)
  module, network_flags = end_to_end.entry_point(args.agent, args.network,
                                                 stack_size=args.stack_size)
  assert module == 'seed_rl.environments.atari.vtrace_main'
  assert network_flags == ['--network=nature', '--stack_size=4']
  flags = _flag_values(end_to_end.learner_flags(args, tmp_path))
  assert {key: flags[key] for key in ['game', 'num_envs', 'env_batch_size', 'unroll_length',
                                      'batch_size', 'num_action_repeats']} == {
      'game': 'Pong', 'num_envs': '16', 'env_batch_size': '8', 'unroll_length': '32',
      'batch_size': '32', 'num_action_repeats': '4'}
  assert flags['server_address'].startswith('shm:')
  assert 'unroll_queue_max_size' not in flags  # The agent's default.
  assert 'mixed_precision' not in flags
  args = side_by_side.seed_rl_args(side_by_side.parse_args(['--mixed_precision=bfloat16']))
  assert _flag_values(end_to_end.learner_flags(args, tmp_path))['mixed_precision'] == 'bfloat16'


@needs_sample_factory
@pytest.mark.timeout(120)
def test_sample_factorys_parser_takes_the_command_line():
  flags = side_by_side.sample_factory_flags(side_by_side.parse_args([]), pathlib.Path('/tmp/sf'))
  script = ('import json, sys\nfrom sf_examples.atari.train_atari import parse_atari_args\n'
            'cfg = parse_atari_args(sys.argv[1:])\n'
            'print(json.dumps({k: getattr(cfg, k) for k in ["batch_size", "rollout", '
            '"recurrence", "with_vtrace", "normalize_returns", "async_rl", "num_epochs", '
            '"num_batches_per_epoch", "env_frameskip", "env_framestack", '
            '"encoder_conv_architecture", "use_rnn", "summaries_use_frameskip"]}))')
  result = subprocess.run([str(SF_VENV_PYTHON), '-c', script] + flags, capture_output=True,
                          text=True, timeout=110, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads(result.stdout.strip().splitlines()[-1]) == {
      'batch_size': 1024, 'rollout': 32, 'recurrence': 32, 'with_vtrace': True,
      'normalize_returns': False, 'async_rl': True, 'num_epochs': 1,
      'num_batches_per_epoch': 1, 'env_frameskip': 4, 'env_framestack': 4,
      'encoder_conv_architecture': 'convnet_atari', 'use_rnn': False,
      'summaries_use_frameskip': True}


@needs_sample_factory
@pytest.mark.timeout(290)
def test_sample_factorys_v_trace_trains_and_is_measured(tmp_path):
  # Small shapes: 1 worker of 2 envs, rollouts of 8, batches of 2 x 8 transitions; reports come
  # every 5 s, so a window of 11 s holds at least two.
  args = side_by_side.parse_args(['--num_actors=1', '--env_batch_size=2', '--unroll_length=8',
                                  '--batch_size=2', '--seconds=11', '--warmup_seconds=0'])
  rates = side_by_side.run_sample_factory(args, str(SF_VENV_PYTHON), tmp_path)
  assert rates['trained_frames_per_sec'] > 0
  assert rates['acted_frames_per_sec'] > 0
  assert 0 < rates['cores_busy'] < len(os.sched_getaffinity(0)) + 0.5
  log = (tmp_path / 'sample_factory' / 'side_by_side' / 'sf_log.txt').read_text()
  assert 'Traceback' not in log
  assert 'Keyboard interrupt detected' in log  # Stopped in order, by SIGINT.
