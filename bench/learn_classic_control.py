r"""Learning benchmark: the `gym` entry points on classic control, over several seeds.

  python -m bench.learn_classic_control [--agents vtrace,r2d2,ppo] [--envs CartPole-v1,Acrobot-v1]
      [--seeds 1,2,3] [--frame_budget 500000] [--num_actors 2] [--env_batch_size 8]
      [--logdir DIR] [--plot curves.png] [-- --flag=value ...]

For every agent, environment and seed it runs a real learner and actors of
`seed_rl.environments.gym.<agent>_main` with the entry point's defaults (plus the flags after
`--`) until the frame budget is spent, reads the episode returns from the learner's TensorBoard
summaries and prints, per run: the frames and wall time when the mean return of 20 consecutive
episodes first reached the environment's threshold (CartPole-v1 475, Acrobot-v1 -100: the
Gymnasium "solved" levels), and the mean return over the final 100,000 frames of the budget
(the threshold again is the baseline it is read against). `--tag=eval/episode_return` reads
the evaluation environments' episodes instead (with `-- --num_eval_envs=N`: R2D2's training
environments explore with epsilons up to 0.4). `--plot` draws the mean and min-max
band of the seeds per agent and environment (`seed_rl.plot`).
"""

import argparse
import pathlib
import re
import subprocess
import sys
import time
from typing import Optional, Sequence

import numpy as np

from bench import process_group
from seed_rl import plot

MODULE = 'seed_rl.environments.gym.{agent}_main'
THRESHOLDS = {'CartPole-v1': 475., 'Acrobot-v1': -100., 'MountainCar-v0': -110.}
WINDOW = 20
FINAL_FRAMES = 100000
_PROGRESS = re.compile(r'Progress: (\d+)/')


def first_reached(frames: np.ndarray, returns: np.ndarray, threshold: float,
                  window: int = WINDOW) -> Optional[int]:
  """Index of the episode at which the mean of the last `window` returns first reached
  `threshold`, or None."""
  if len(returns) < window:
    return None
  means = np.convolve(returns, np.ones(window) / window, mode='valid')
  reached = np.flatnonzero(means >= threshold)
  return int(reached[0]) + window - 1 if reached.size else None


def run_one(agent: str, env_name: str, seed: int, args: argparse.Namespace,
            logdir: pathlib.Path, extra: Sequence[str]) -> dict:
  """Trains one seed to the end of its budget; returns what its summaries say."""
  logdir.mkdir(parents=True)
  num_envs = args.num_actors * args.env_batch_size
  flags = [f'--logdir={logdir}', f'--server_address=unix:{logdir}/learner.sock',
           f'--env_name={env_name}', f'--num_envs={num_envs}',
           f'--env_batch_size={args.env_batch_size}', f'--inference_batch_size={num_envs}',
           f'--total_environment_frames={int(args.frame_budget)}',
           '--save_checkpoint_secs=100000', '--log_episode_frequency=1', f'--seed={seed}',
           *extra]
  start = time.time()
  with process_group.ProcessGroup(logdir, MODULE.format(agent=agent), flags) as group:
    learner = group.start('learner', ['--run_mode=learner'])
    for task in range(args.num_actors):
      group.start(f'actor_{task}', ['--run_mode=actor', f'--task={task}'])
    try:
      learner.wait(timeout=60 * args.max_minutes)
    except subprocess.TimeoutExpired:
      pass
  wall = time.time() - start
  if learner.returncode not in (0, None):
    print((logdir / 'learner.log').read_text()[-3000:], file=sys.stderr)
    raise SystemExit(f'{agent} on {env_name}, seed {seed}: the learner exited with status '
                     f'{learner.returncode} (its log above)')
  (run,) = plot.load_runs([str(logdir)], tag=args.tag, label_by='name')
  frames, returns = run.x('frames'), run.values
  minutes = run.x('time')
  index = first_reached(frames, returns, THRESHOLDS[env_name])
  trained = _PROGRESS.findall((logdir / 'learner.log').read_text())
  trained = int(trained[-1]) if trained else 0
  final = returns[frames > trained - FINAL_FRAMES]
  return {'seed': seed, 'wall_s': wall, 'frames': trained,
          'reached': None if index is None else (int(frames[index]), 60 * minutes[index]),
          'final_mean': float(np.mean(final)) if final.size else float('nan'),
          'logdir': str(logdir)}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--agents', default='vtrace,r2d2')
  parser.add_argument('--envs', default='CartPole-v1,Acrobot-v1')
  parser.add_argument('--seeds', default='1,2,3')
  parser.add_argument('--frame_budget', type=float, default=500000)
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--env_batch_size', type=int, default=8)
  parser.add_argument('--max_minutes', type=float, default=30,
                      help='Time limit of one run.')
  parser.add_argument('--logdir', default=None,
                      help='New directory that keeps the runs (default: a temporary one).')
  parser.add_argument('--plot', default=None, help='PNG of the curves (mean and min-max).')
  parser.add_argument('--tag', default=plot.DEFAULT_TAG,
                      help='Episode returns to read: episode_return (training environments) '
                      'or eval/episode_return (the --num_eval_envs evaluation environments).')
  argv = sys.argv[1:]
  extra = argv[argv.index('--') + 1:] if '--' in argv else []
  args = parser.parse_args(argv[:argv.index('--')] if '--' in argv else argv)

  def run_all(root: pathlib.Path) -> None:
    logdirs = []
    for agent in args.agents.split(','):
      for env_name in args.envs.split(','):
        threshold = THRESHOLDS[env_name]
        print(f'{agent} on {env_name}: {args.num_actors} actors x {args.env_batch_size} envs, '
              f'{int(args.frame_budget)} frames, threshold {threshold:g} (mean of {WINDOW} '
              f'episodes){", flags " + " ".join(extra) if extra else ""}', flush=True)
        for seed in (int(s) for s in args.seeds.split(',')):
          result = run_one(agent, env_name, seed, args, root / f'{agent}_{env_name}' /
                           f'seed{seed}', extra)
          logdirs.append(result['logdir'])
          reached = ('NOT reached' if result['reached'] is None else
                     f'reached at {result["reached"][0]} frames, {result["reached"][1]:.0f} s')
          print(f'  seed {seed}: {reached}; mean over the final {FINAL_FRAMES} frames '
                f'{result["final_mean"]:.1f} (>= {threshold:g}: '
                f'{"yes" if result["final_mean"] >= threshold else "no"}); '
                f'{result["frames"]} frames in {result["wall_s"]:.0f} s', flush=True)
    if args.plot:
      runs = plot.load_runs(logdirs, tag=args.tag, label_by='parent')
      plot.plot_curves(plot.curves(runs, smoothing=WINDOW, points=200), args.plot,
                       title='gym entry points, mean and min-max over seeds')
      print(f'curves: {args.plot}')

  process_group.run_in_logdir(args.logdir, run_all)


if __name__ == '__main__':
  main()
