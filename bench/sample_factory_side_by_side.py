r"""Sample Factory 2.1.1's APPO and seed_rl's V-trace on the same Atari shapes, alternated in one
run on this machine: each side's frames/s, the medians and seed_rl / Sample Factory.

  python -m bench.sample_factory_side_by_side [--rounds 2] [--seconds 60] [--warmup_seconds 30]
      [--mixed_precision bfloat16]

Each round runs Sample Factory (`bench/sample_factory_train.py`, in its own virtualenv, made on
first use by `bench/sample_factory_venv.sh`), then seed_rl (`bench/end_to_end.py`'s pipeline);
each measures `--seconds` once its learner has trained and `--warmup_seconds` more have passed.

The shapes, both sides: Pong, `--num_actors` actors (Sample Factory: rollout workers) of
`--env_batch_size` envs each, unrolls (rollouts) of `--unroll_length` steps, training batches of
`--batch_size` unrolls (Sample Factory: `--batch_size` of unrolls x length transitions, one
minibatch, one epoch: one gradient step per batch, as V-trace takes), frame skip 4, the
Nature-DQN CNN (three convolutions, a 512-unit dense layer; Sample Factory's `convnet_atari`),
no RNN, CPU only. Sample Factory: APPO with `--with_vtrace=True --async_rl=True` (V-trace needs
`--recurrence` = `--rollout` and `--normalize_returns=False`), its Atari defaults otherwise
(`sf_examples.atari`: observations normalized, rollout workers pinned to cores, one inference
worker, torch on one thread per process). seed_rl: `atari vtrace --network=nature` with its
defaults (4 frames stacked inside the network, actors through shared memory, the learner's
TensorFlow threads run_local.sh gives it).

What is counted, in the same unit on both sides: raw Atari frames (agent steps x frame skip 4).
- trained frames/s, the headline: Sample Factory's own FPS, its runner's `Total num frames`
  (the learner adds each batch's transitions x `env_frameskip` once it trained on it:
  `summaries_use_frameskip`, on in the Atari defaults); seed_rl's learner's `Progress: N/...
  environment frames` (unrolls trained x unroll length x `--num_action_repeats`).
- acted frames/s: Sample Factory's `Samples` (observations its inference worker answered) x 4;
  seed_rl's actors' `Actor steps` x envs per actor x 4.
In a steady state the two agree; each is the slope of its counter over the window.

Where the work differs: Sample Factory's env (`PongNoFrameskip-v4`, ale-py's RGB screen each
emulator frame, max of the last two, resized then grayscaled by gymnasium's wrappers, 4 frames
stacked in the env, fire on reset, reward clipping, episodic life, which Pong's lack of lives
leaves idle) sends 4 x 84 x 84 bytes per step to inference; seed_rl's (ALE's grayscale screen of
the last two frames of each step, max-pooled, resized by OpenCV) sends one 84 x 84 frame and its
network keeps the last 4 in its state. Sample Factory acts in Pong's 6 actions, seed_rl in all 18
(`--full_action_space`'s default); both with up to 30 no-ops at reset and no sticky actions. Both
sides' ale-py is seed_rl's version.
"""

import argparse
import datetime
import math
import os
import pathlib
import re
import signal
import statistics
import subprocess
import time
from collections.abc import Sequence
from typing import Optional

from bench import end_to_end
from bench import process_group

VENV_SCRIPT = process_group.ROOT / 'bench' / 'sample_factory_venv.sh'
# Sample Factory's runner's report (its log file's format: `[asctime][pid] message`), every 5 s.
_REPORT = re.compile(r'^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[\d+\] Fps is .*'
                     r'Total num frames: (\d+)\. .*Samples: (\d+)\.')
# Until Sample Factory's learner has trained (its processes start, decorrelate their envs).
_START_TIMEOUT_S = 300
# Sample Factory's orderly stop after SIGINT, before its processes are killed.
_STOP_TIMEOUT_S = 30
_POLL_S = 1


def sample_factory_reports(log_text: str) -> list[tuple[float, int, int]]:
  """`(seconds since the epoch, frames trained, observations acted on)` of each of Sample
  Factory's runner's reports in its log file (`sf_log.txt`), in this machine's time zone."""
  reports = []
  for line in log_text.splitlines():
    match = _REPORT.match(line)
    if match:
      moment = datetime.datetime.strptime(match.group(1), '%Y-%m-%d %H:%M:%S,%f')
      reports.append((moment.timestamp(), int(match.group(2)), int(match.group(3))))
  return reports


def window_rate(points: Sequence[tuple[float, float]], start: float, end: float) -> float:
  """Slope of a counter's `(time, value)` points from the first to the last in `[start, end]`;
  NaN without two."""
  inside = [point for point in points if start <= point[0] <= end]
  if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
    return math.nan
  (t0, v0), (t1, v1) = inside[0], inside[-1]
  return (v1 - v0) / (t1 - t0)


def sample_factory_flags(args: argparse.Namespace, train_dir: pathlib.Path) -> list[str]:
  """`bench.sample_factory_train`'s command line for the shapes of `args`."""
  rollout = args.unroll_length
  return [f'--env=atari_{args.game.lower()}', '--experiment=side_by_side',
          f'--train_dir={train_dir}', '--device=cpu', f'--num_workers={args.num_actors}',
          f'--num_envs_per_worker={args.env_batch_size}', f'--rollout={rollout}',
          f'--recurrence={rollout}', f'--batch_size={args.batch_size * rollout}',
          '--num_batches_per_epoch=1', '--num_epochs=1', '--with_vtrace=True',
          '--normalize_returns=False', '--async_rl=True',
          f'--env_frameskip={args.num_action_repeats}', '--train_for_env_steps=10000000000',
          '--save_every_sec=100000', '--keep_checkpoints=1'] + list(args.sample_factory_args)


def seed_rl_args(args: argparse.Namespace) -> argparse.Namespace:
  """`bench.end_to_end`'s arguments of seed_rl's side: the same shapes, the V-trace entry point's
  Nature network on its default 4 stacked frames, shared memory."""
  return end_to_end.parse_args([
      '--agent=vtrace', '--network=nature', '--stack_size=4', '--transport=shm',
      f'--game={args.game}', f'--num_actors={args.num_actors}',
      f'--env_batch_size={args.env_batch_size}', f'--unroll_length={args.unroll_length}',
      f'--batch_size={args.batch_size}', f'--num_action_repeats={args.num_action_repeats}',
      f'--seconds={args.seconds}', f'--warmup_seconds={args.warmup_seconds}'] + (
          [] if args.mixed_precision is None else [f'--mixed_precision={args.mixed_precision}']))


def _session_cpu_seconds(session: int) -> dict[int, float]:
  """CPU time so far of each live process of `session`."""
  seconds = {}
  for entry in os.listdir('/proc'):
    if not entry.isdigit():
      continue
    try:
      with open(f'/proc/{entry}/stat') as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    except OSError:
      continue
    if int(fields[3]) == session:  # proc(5): state, ppid, pgrp, session after the name.
      seconds[int(entry)] = process_group.cpu_seconds(int(entry))
  return seconds


def run_sample_factory(args: argparse.Namespace, python: str, logdir: pathlib.Path) -> dict:
  """Runs Sample Factory; its trained and acted frames/s over `args.seconds` once its learner
  trained and `args.warmup_seconds` passed, and the cores its processes kept busy meanwhile."""
  train_dir = logdir / 'sample_factory'
  log_file = train_dir / 'side_by_side' / 'sf_log.txt'
  with process_group.ProcessGroup(logdir, 'bench.sample_factory_train',
                                  sample_factory_flags(args, train_dir), python=python,
                                  own_sessions=True) as group:
    runner = group.start('sample_factory', [], {'CUDA_VISIBLE_DEVICES': ''})
    deadline = time.time() + _START_TIMEOUT_S
    while not any(frames for _, frames, _ in sample_factory_reports(
        log_file.read_text() if log_file.exists() else '')):
      if time.time() > deadline or runner.poll() is not None:
        raise RuntimeError('Sample Factory did not start training:\n' +
                           (logdir / 'sample_factory.log').read_text()[-3000:])
      time.sleep(_POLL_S)
    time.sleep(args.warmup_seconds)
    cpu_start, start = _session_cpu_seconds(runner.pid), time.time()
    time.sleep(args.seconds)
    cpu_end, end = _session_cpu_seconds(runner.pid), time.time()
    runner.send_signal(signal.SIGINT)
    try:
      runner.wait(timeout=_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
      pass  # Leaving the group kills what is left.
  reports = sample_factory_reports(log_file.read_text())
  busy = sum(cpu_end[pid] - cpu_start[pid] for pid in cpu_start
             if math.isfinite(cpu_end.get(pid, math.nan))) / (end - start)
  rates = {'trained_frames_per_sec': window_rate([(t, f) for t, f, _ in reports], start, end),
           'acted_frames_per_sec': window_rate([(t, s) for t, _, s in reports], start, end)
                                   * args.num_action_repeats,
           'cores_busy': busy}
  if not math.isfinite(rates['trained_frames_per_sec']):
    raise RuntimeError(f'Sample Factory reported too little in {args.seconds:g} s:\n' +
                       log_file.read_text()[-3000:])
  return rates


def run_seed_rl(args: argparse.Namespace, logdir: pathlib.Path) -> dict:
  """Runs seed_rl's pipeline (`bench.end_to_end.run_pipeline`); the same rates as
  `run_sample_factory`'s."""
  result = end_to_end.run_pipeline(seed_rl_args(args), logdir)
  return {'trained_frames_per_sec': result['training_frames_per_sec'],
          'acted_frames_per_sec': result['env_frames_per_sec'],
          'cores_busy': result['learner_cores_busy'] + result['actors_cores_busy']}


def summarize(rounds: Sequence[dict]) -> dict:
  """The median of each side's rates over `rounds` (each `{'sample_factory': rates, 'seed_rl':
  rates}`), and seed_rl's over Sample Factory's for each rate."""
  summary = {}
  for key in ('trained_frames_per_sec', 'acted_frames_per_sec'):
    medians = {side: statistics.median(r[side][key] for r in rounds)
               for side in ('sample_factory', 'seed_rl')}
    summary[key] = dict(medians, ratio=medians['seed_rl'] / medians['sample_factory'])
  return summary


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
  """The command line (`sys.argv[1:]` by default)."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=2, help='Sample Factory then seed_rl, each')
  parser.add_argument('--seconds', type=float, default=60, help='measured, each run')
  parser.add_argument('--warmup_seconds', type=float, default=30,
                      help="from a learner's first training step to its measured window")
  parser.add_argument('--game', default='Pong')
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--env_batch_size', type=int, default=8)
  parser.add_argument('--unroll_length', type=int, default=32)
  parser.add_argument('--batch_size', type=int, default=32, help='unrolls per training step')
  parser.add_argument('--num_action_repeats', type=int, default=4)
  parser.add_argument('--sample_factory_python', default=None,
                      help="Sample Factory's interpreter (default: bench/sample_factory_venv.sh's)")
  parser.add_argument('--sample_factory_arg', action='append', default=[],
                      dest='sample_factory_args',
                      help="one more of Sample Factory's flags (repeatable), e.g. "
                           '--sample_factory_arg=--worker_num_splits=2')
  parser.add_argument('--mixed_precision', choices=['off', 'bfloat16', 'auto'], default=None,
                      help="seed_rl's learner's --mixed_precision (default: its own, off)")
  parser.add_argument('--logdir', default=None, help='keep the logs in this new directory')
  return parser.parse_args(argv)


def _print_rates(name: str, rates: dict) -> None:
  print(f'  {name:<15} trained {rates["trained_frames_per_sec"]:7.0f} frames/s, acted '
        f'{rates["acted_frames_per_sec"]:7.0f} frames/s, cores busy {rates["cores_busy"]:.2f}',
        flush=True)


def main() -> None:
  args = parse_args()
  python = args.sample_factory_python or subprocess.run(
      [str(VENV_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
  print(f'{args.game}, Nature-DQN CNN, {args.num_actors} actors x {args.env_batch_size} envs, '
        f'unrolls of {args.unroll_length}, batches of {args.batch_size} unrolls, frame skip '
        f'{args.num_action_repeats}; {args.seconds:g} s measured after {args.warmup_seconds:g} s '
        f'of training, {args.rounds} round(s)', flush=True)
  print(f'raw Atari frames/s (agent steps x {args.num_action_repeats}); trained: of the '
        "transitions the learner trained on (Sample Factory's FPS, seed_rl's Progress), acted: "
        'of the steps the actors took', flush=True)

  def run(logdir: pathlib.Path) -> list[dict]:
    rounds = []
    for number in range(args.rounds):
      print(f'round {number + 1}:', flush=True)
      round_dir = logdir / f'round_{number + 1}'
      (round_dir / 'seed_rl').mkdir(parents=True)
      rates = {'sample_factory': run_sample_factory(args, python, round_dir)}
      _print_rates('Sample Factory', rates['sample_factory'])
      rates['seed_rl'] = run_seed_rl(args, round_dir / 'seed_rl')
      _print_rates('seed_rl', rates['seed_rl'])
      rounds.append(rates)
    return rounds

  summary = summarize(process_group.run_in_logdir(args.logdir, run))
  for key, name in [('trained_frames_per_sec', 'trained'), ('acted_frames_per_sec', 'acted')]:
    print(f'median {name}: Sample Factory {summary[key]["sample_factory"]:.0f} frames/s, '
          f'seed_rl {summary[key]["seed_rl"]:.0f} frames/s, ratio seed_rl / Sample Factory '
          f'{summary[key]["ratio"]:.2f}')


if __name__ == '__main__':
  main()
