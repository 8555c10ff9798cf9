"""bench/end_to_end.py's compute-only ceiling: the formula on given timings, its measurement by
the bench's entry points with the minimal network and tiny shapes, and the command line."""

import math
import os
import subprocess
import sys

import pytest

from bench import ceiling
from bench import end_to_end
from tests.processes import ROOT


def test_ceiling_adds_the_per_frame_costs_of_inference_and_training():
  # 10 ms per inference of 1 env step x 4 frames, 0.5 s per training step of 4 x 20 x 4 frames:
  # 2.5 ms + 1.5625 ms per frame.
  assert ceiling.ceiling_frames_per_sec(0.01, 4, 0.5, 320) == pytest.approx(1 / 0.0040625,
                                                                           rel=1e-12)
  assert ceiling.ceiling_frames_per_sec(0.01, 4, 0., 320) == pytest.approx(400., rel=1e-12)
  assert ceiling.ceiling_frames_per_sec(0., 4, 0.5, 320) == pytest.approx(640., rel=1e-12)
  for bad in [(0.01, 0, 0.5, 320), (0.01, 4, 0.5, 0), (-0.01, 4, 0.5, 320), (0., 4, 0., 320)]:
    with pytest.raises(ValueError):
      ceiling.ceiling_frames_per_sec(*bad)


def test_shared_cores_add_the_per_frame_costs_of_compute_and_env_steps():
  # 1/14,500 + 1/37,000 s per frame.
  assert ceiling.shared_cores_frames_per_sec(14_500., 37_000.) == pytest.approx(
      1 / (1 / 14_500 + 1 / 37_000), rel=1e-12)
  assert ceiling.shared_cores_frames_per_sec(1_000., 1_000.) == pytest.approx(500., rel=1e-12)
  for bad in [(0., 37_000.), (14_500., -1.)]:
    with pytest.raises(ValueError):
      ceiling.shared_cores_frames_per_sec(*bad)


def test_cpu_time_bound_adds_the_cpu_time_of_compute_and_env_steps_per_frame():
  # On 2 cores: compute of 10,000 frames/s keeping 1.5 cores busy (150 µs of CPU per frame) and
  # env steps of 30,000 frames/s keeping 2 busy (66.7 µs): 2 / 216.7 µs.
  assert ceiling.cpu_time_frames_per_sec(2, 10_000., 1.5, 30_000., 2.) == pytest.approx(
      2 / (1.5 / 10_000 + 2 / 30_000), rel=1e-12)
  # Both measured filling the cores: the wall-time bound.
  assert ceiling.cpu_time_frames_per_sec(2, 14_500., 2., 37_000., 2.) == pytest.approx(
      ceiling.shared_cores_frames_per_sec(14_500., 37_000.), rel=1e-12)
  # Never above the compute's own rate, however little CPU it takes.
  assert ceiling.cpu_time_frames_per_sec(2, 10_000., 0.1, 1e9, 1.) == 10_000.
  for bad in [(0, 1., 1., 1., 1.), (2, 0., 1., 1., 1.), (2, 1., 0., 1., 1.), (2, 1., 1., -1., 1.),
              (2, 1., 1., 1., 0.)]:
    with pytest.raises(ValueError):
      ceiling.cpu_time_frames_per_sec(*bad)


def test_parse_line_reads_the_last_measurement():
  text = ('noise\n' + ceiling.LINE_PREFIX + '{"frames_per_sec": 1.0}\n' +
          ceiling.LINE_PREFIX + '{"frames_per_sec": 2.5}\nmore noise\n')
  assert ceiling.parse_line(text) == {'frames_per_sec': 2.5}
  assert ceiling.parse_line('no measurement\n') is None
  assert ceiling.parse_line('noise\n' + ceiling.format_line({'frames_per_sec': 3.5}) + '\n') == {
      'frames_per_sec': 3.5}


def test_command_line_and_entry_points():
  args = end_to_end.parse_args([])
  assert (args.agent, args.network) == ('vtrace', 'impala')
  assert end_to_end.parse_args(['--minimal_network']).network == 'minimal'
  args = end_to_end.parse_args(['--agent', 'r2d2', '--network', 'nature'])
  assert (args.agent, args.network) == ('r2d2', 'nature')
  with pytest.raises(SystemExit):
    end_to_end.parse_args(['--network', 'resnet'])
  assert end_to_end.entry_point('r2d2', 'impala') == (
      'seed_rl.environments.atari.r2d2_main', ['--network=impala'])
  assert end_to_end.entry_point('vtrace', 'nature') == (
      'seed_rl.environments.atari.vtrace_main', ['--network=nature', '--stack_size=1'])
  assert end_to_end.entry_point('vtrace', 'nature', stack_size=4) == (
      'seed_rl.environments.atari.vtrace_main', ['--network=nature', '--stack_size=4'])
  assert (args.stack_size, args.warmup_seconds) == (1, 2.)
  args = end_to_end.parse_args(['--stack_size', '4', '--warmup_seconds', '10'])
  assert (args.stack_size, args.warmup_seconds) == (4, 10.)
  assert end_to_end.entry_point('vtrace', 'minimal') == (
      'seed_rl.environments.atari.vtrace_main', ['--network=minimal'])


def test_queue_size_and_buffering_reach_the_learner_and_the_lag_is_read_from_its_log(tmp_path):
  args = end_to_end.parse_args(['--unroll_queue_max_size', '64', '--double_buffered_acting',
                                 '--inference_batch_size', '16', '--mixed_precision', 'bfloat16'])
  assert {'--unroll_queue_max_size=64', '--double_buffered_acting',
          '--inference_batch_size=16', '--mixed_precision=bfloat16'} <= set(
              end_to_end.learner_flags(args, tmp_path))
  assert not any('unroll_queue' in flag or 'double' in flag or 'inference_batch' in flag
                 or 'precision' in flag
                 for flag in end_to_end.learner_flags(end_to_end.parse_args([]), tmp_path))
  log = ('I1204 10:00:01.000000 1 runtime.py:1] Progress: 40/100 environment frames '
         '(policy lag 9.0 iterations, at most 12)\n'
         'I1204 10:00:05.000000 1 runtime.py:1] Progress: 80/100 environment frames '
         '(policy lag 2.5 iterations, at most 4)\n'
         'I1204 10:00:06.000000 1 runtime.py:1] Progress: 90/100 environment frames '
         '(policy lag 3.5 iterations, at most 4)\n')
  lags = end_to_end._timestamped(log, end_to_end.POLICY_LAG)
  assert end_to_end._mean(lags, start=10 * 3600 + 2) == 3.0  # The window's lines only.
  assert math.isnan(end_to_end._mean(lags, start=10 * 3600 + 7))


@pytest.mark.timeout(180)
def test_entry_points_measure_a_consistent_ceiling():
  # 2 envs of 1: inference batches of max(1, 2 // 2) = 1 row; V-trace trains on 2 unrolls of 2
  # steps, R2D2 inserts 2 / replay_ratio 1 = 2 new unrolls per step (of 1 + 2 + 1 steps).
  flags = ['--network=minimal', '--measure_ceiling_secs=0.2', '--num_envs=2', '--unroll_length=2',
           '--batch_size=2', '--num_action_repeats=4', '--game=Pong']
  r2d2_flags = ['--burn_in=1', '--replay_ratio=1', '--replay_buffer_min_size=2']
  processes = {agent: subprocess.Popen(
      [sys.executable, '-m', 'bench.ceiling_mode', f'seed_rl.environments.atari.{agent}_main']
      + flags + extra, cwd=ROOT,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
      for agent, extra in [('vtrace', []), ('r2d2', r2d2_flags)]}
  outputs = {}
  try:
    for agent, process in processes.items():
      outputs[agent] = process.communicate(timeout=170)
  finally:
    for process in processes.values():
      if process.poll() is None:
        process.kill()
        process.wait()
  for agent, (stdout, stderr) in outputs.items():
    assert processes[agent].returncode == 0, (agent, stderr[-3000:])
    result = ceiling.parse_line(stdout)
    assert result is not None, (agent, stdout)
    assert result['inference_batch_size'] == 1
    assert result['frames_per_inference'] == 4
    assert result['frames_per_training_step'] == 2 * 2 * 4
    assert result['inference_secs'] > 0 and result['training_step_secs'] > 0
    assert result['sequential_frames_per_sec'] == pytest.approx(ceiling.ceiling_frames_per_sec(
        result['inference_secs'], 4, result['training_step_secs'], 16), rel=1e-9)
    # Both at once: one inference thread per batch in flight (2 envs / batches of 1).
    assert result['inference_threads'] == 2
    assert math.isfinite(result['overlapped_frames_per_sec'])
    assert result['overlapped_frames_per_sec'] > 0
    assert 0 < result['overlapped_training_busy'] <= 1
    assert 0 < result['overlapped_inference_busy'] <= 1
    assert 0 < result['overlapped_inference_call_median_secs'] <= (
        result['overlapped_inference_call_p99_secs']) <= (
            result['overlapped_inference_call_max_secs'])
    assert 0 < result['overlapped_cores_busy'] < len(os.sched_getaffinity(0)) + 0.5
    assert result['frames_per_sec'] == max(result['sequential_frames_per_sec'],
                                           result['overlapped_frames_per_sec'])


@pytest.mark.timeout(120)
@pytest.mark.parametrize('args, message', [
    ([], 'usage: python -m bench.ceiling_mode ENTRY_POINT_MODULE'),
    (['--measure_ceiling_secs=1'], 'usage: python -m bench.ceiling_mode ENTRY_POINT_MODULE'),
    (['seed_rl.environments.atari.ppo_main', '--measure_ceiling_secs=1'],
     'seed_rl.environments.atari.ppo_main runs seed_rl.agents.policy_gradient.learner; these '
     'benchmarks measure seed_rl.agents.r2d2.learner, seed_rl.agents.vtrace.learner'),
    (['seed_rl.environments.atari.vtrace_main', '--measure_ceiling_secs=0'],
     '--measure_ceiling_secs must be positive'),
    (['seed_rl.environments.atari.vtrace_main', 'extra'], 'Too many command-line arguments'),
])
def test_the_ceiling_tool_refuses_what_it_cannot_measure(args, message):
  result = subprocess.run([sys.executable, '-m', 'bench.ceiling_mode'] + args, cwd=ROOT,
                          capture_output=True, text=True, timeout=100, check=False)
  assert result.returncode != 0
  assert message in result.stderr, result.stderr[-3000:]
