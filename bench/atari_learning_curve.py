r"""Learning curve of an Atari entry point on one machine, as a user runs it.

  python -m bench.atari_learning_curve --agent vtrace|r2d2 [--frame_budget 1e7] [--num_actors 2]
      [--env_batch_size 8] [--seed 1] [--logdir DIR] [--out PREFIX] [--stop_at 15]
      [--max_minutes 180] [--flag=value ...]
  python -m bench.atari_learning_curve --agent r2d2 --report_only --logdir DIR [--out PREFIX]

Runs `./run_local.sh atari AGENT NUM_ACTORS ENV_BATCH_SIZE
--flagfile=seed_rl/environments/atari/one_machine/AGENT.flags --logdir=DIR
--total_environment_frames=BUDGET --seed=SEED` (further `--flag=value` arguments follow), the
command README gives, in the background. It stops the run (`./stop_local.sh --logdir=DIR`: the
learner checkpoints first) when the windowed mean reaches `--stop_at`, after `--max_minutes`, or
lets it end at the budget. A logdir with a checkpoint is resumed, as run_local.sh does.

Then it reads the greedy evaluation return of the run's evaluation environments
(`eval/episode_return`, one point per episode, at the training frames of its end) through
`seed_rl.plot`, writes the curve smoothed over `--window` episodes as PREFIX.png and PREFIX.csv,
and prints the training frames and the minutes since the run's first event at which the
windowed mean first reached 0 and +15. `--report_only` does only that, for a run made by hand.
"""

import argparse
import dataclasses
import os
import pathlib
import subprocess
import sys
import time
from typing import Optional, Sequence

import numpy as np

from seed_rl import plot

ROOT = pathlib.Path(__file__).resolve().parents[1]
AGENTS = ('vtrace', 'r2d2')
TAG = 'eval/episode_return'
THRESHOLDS = (0., 15.)
# Seconds between two looks at the event files while the run trains.
POLL_SECS = 60


def flagfile(agent: str) -> pathlib.Path:
  """The one-machine flags of `agent`'s Atari entry point."""
  return ROOT / 'seed_rl' / 'environments' / 'atari' / 'one_machine' / f'{agent}.flags'


def run_local_command(args: argparse.Namespace, extra_flags: Sequence[str]) -> list[str]:
  """The run_local.sh command line of the run."""
  return [str(ROOT / 'run_local.sh'), 'atari', args.agent, str(args.num_actors),
          str(args.env_batch_size), f'--flagfile={flagfile(args.agent)}',
          f'--logdir={args.logdir}', f'--total_environment_frames={int(args.frame_budget)}',
          f'--seed={args.seed}', *extra_flags]


@dataclasses.dataclass(frozen=True)
class Crossing:
  """Where the windowed mean first reached `threshold`: training frames and minutes since the
  run's first event; None for both if it never did."""
  threshold: float
  frames: Optional[int]
  minutes: Optional[float]


def windowed_mean(values: np.ndarray, window: int) -> np.ndarray:
  """Mean of each episode's return and the `window - 1` before it; NaN until `window` episodes
  have ended (a mean of fewer would reach a threshold by luck)."""
  means = plot.smooth(values, window)
  means[:window - 1] = np.nan
  return means


def crossings(run: plot.Run, window: int,
              thresholds: Sequence[float] = THRESHOLDS) -> list[Crossing]:
  """The first point at which `run`'s windowed mean reached each threshold."""
  means = windowed_mean(run.values, window)
  minutes = run.x('time')
  result = []
  for threshold in thresholds:
    reached = np.flatnonzero(means >= threshold)
    if reached.size:
      first = int(reached[0])
      result.append(Crossing(threshold, int(run.steps[first]), float(minutes[first])))
    else:
      result.append(Crossing(threshold, None, None))
  return result


def load_run(logdir: str) -> plot.Run:
  """The run's evaluation returns (raises `plot.PlotError` before the first one)."""
  return plot.load_runs([logdir], TAG, label_by='name')[0]


def reached(logdir: str, window: int, target: float) -> bool:
  """Whether the run's windowed evaluation mean has reached `target` (False before any)."""
  try:
    run = load_run(logdir)
  except plot.PlotError:
    return False
  return crossings(run, window, [target])[0].frames is not None


def train(args: argparse.Namespace, extra_flags: Sequence[str]) -> int:
  """Runs run_local.sh until the budget, `--stop_at` or `--max_minutes`; its exit status."""
  environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1')
  command = run_local_command(args, extra_flags)
  print(' '.join(command), flush=True)
  process = subprocess.Popen(command, cwd=ROOT, env=environment)
  deadline = time.monotonic() + args.max_minutes * 60
  try:
    while process.poll() is None:
      try:
        process.wait(timeout=POLL_SECS)
      except subprocess.TimeoutExpired:
        pass
      stop = time.monotonic() > deadline or (
          args.stop_at is not None and reached(args.logdir, args.window, args.stop_at))
      if stop and process.poll() is None:
        print('stopping the run', flush=True)
        subprocess.run([str(ROOT / 'stop_local.sh'), f'--logdir={args.logdir}'], cwd=ROOT,
                       check=False, timeout=180)
        process.wait(timeout=120)
  finally:
    if process.poll() is None:
      process.kill()
  return process.returncode


def report(logdir: str, window: int, out: Optional[str]) -> str:
  """Writes the smoothed curve (PNG and CSV at `out`) and returns the crossings as text."""
  run = load_run(logdir)
  if out:
    curve = plot.curves([run], smoothing=window)
    plot.write_csv(curve, f'{out}.csv')
    plot.plot_curves(curve, f'{out}.png', tag=f'{TAG} (mean of {window} episodes)')
  lines = [f'{logdir}: {run.values.size} evaluation episodes up to {int(run.steps[-1]):,} '
           f'training frames, last mean of {window}: '
           f'{windowed_mean(run.values, window)[-1]:.2f}']
  for crossing in crossings(run, window):
    if crossing.frames is None:
      lines.append(f'mean of {window} >= {crossing.threshold:+g}: not reached')
    else:
      lines.append(f'mean of {window} >= {crossing.threshold:+g}: {crossing.frames:,} frames, '
                   f'{crossing.minutes:.0f} minutes')
  return '\n'.join(lines)


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
  """The bench's own arguments, and the `--flag=value` ones it passes to run_local.sh."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--agent', choices=AGENTS, required=True)
  parser.add_argument('--frame_budget', type=float, default=1e7)
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--env_batch_size', type=int, default=8)
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--logdir', help='the run\'s logdir (default /tmp/atari_AGENT_seedSEED)')
  parser.add_argument('--out', help='PREFIX of the PNG and CSV (default: the logdir\'s '
                      'curve.png and curve.csv)')
  parser.add_argument('--window', type=int, default=10,
                      help='evaluation episodes averaged for the curve and the crossings')
  parser.add_argument('--stop_at', type=float,
                      help='stop once the windowed mean reaches this (default: train the budget)')
  parser.add_argument('--max_minutes', type=float, default=180)
  parser.add_argument('--report_only', action='store_true',
                      help='do not train: report on the run in --logdir')
  args, extra_flags = parser.parse_known_args(argv)
  unknown = [flag for flag in extra_flags if not flag.startswith('--')]
  if unknown:
    parser.error(f'unexpected argument(s) {" ".join(unknown)}: give --flag=value')
  if args.window < 1:
    parser.error(f'--window must be at least 1, got {args.window}')
  args.logdir = args.logdir or f'/tmp/atari_{args.agent}_seed{args.seed}'
  args.out = args.out or os.path.join(args.logdir, 'curve')
  return args, extra_flags


def main(argv: Optional[Sequence[str]] = None) -> int:
  args, extra_flags = parse_args(sys.argv[1:] if argv is None else argv)
  if not args.report_only:
    status = train(args, extra_flags)
    if status:
      print(f'run_local.sh exited with status {status}', file=sys.stderr)
  try:
    print(report(args.logdir, args.window, args.out))
  except plot.PlotError as e:
    print(f'atari_learning_curve: {e}', file=sys.stderr)
    return 2
  print(f'wrote {args.out}.png and {args.out}.csv')
  return 0


if __name__ == '__main__':
  sys.exit(main())
