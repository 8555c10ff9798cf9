r"""Learning benchmark: SAC or PPO on a MuJoCo task for a frame budget (HalfCheetah-v5 by default).

  python -m bench.learn_mujoco [--agent sac|ppo] [--env_name HalfCheetah-v5]
                               [--frame_budget N] [--num_actors N] [--env_batch_size N]
                               [--max_minutes 120] [SAC only: --replay_ratio R --mlp_size N ...]

Starts a real learner and `num_actors` actors of `seed_rl.environments.mujoco.<agent>_main`
(unix socket, as `./run_local.sh mujoco sac|ppo` does), follows the learner's per-episode log
lines and prints the curve of mean returns over windows of `window` episodes against
environment frames, the frames and wall time when the mean first reached `target` (if it did),
and the actors' peak memory. The baseline the curve is read against is the target, the level
published results reach at that budget: SAC 3,000 within 200,000 steps on HalfCheetah; PPO
(ppo.gin and ppo_main's defaults: steps of 2048 transitions, 10 epochs of 64-transition
minibatches) 1,500 within 1,000,000 steps.
"""

import argparse
import pathlib
import re
import sys
import time

from bench import process_group
from seed_rl.launch import progress_monitor

MODULE = 'seed_rl.environments.mujoco.{agent}_main'
# Per agent: frame budget, target, actors x envs per actor.
AGENT_DEFAULTS = {'sac': dict(frame_budget=200000, target=3000, num_actors=1, env_batch_size=4),
                  'ppo': dict(frame_budget=1000000, target=1500, num_actors=2,
                              env_batch_size=16)}
_PROGRESS = re.compile(r'Progress: (\d+)/')
# SAC flags the command line may override (name: type); by default sac_main's own (its
# single-machine ones). --agent ppo refuses them.
_SAC_FLAGS = {'batch_size': int, 'replay_ratio': float, 'learning_rate': float, 'polyak': float,
              'entropy_cost': float, 'target_entropy': float, 'mlp_size': int}


def _episodes(log_text: str) -> list:
  """(return, environment frames played so far) of every episode the learner's log accounts
  for (`progress_monitor.parse_episodes`)."""
  episodes, frames = [], 0.
  for episode in progress_monitor.parse_episodes(log_text):
    frames += episode.frames
    episodes.append((episode.episode_return, int(frames)))
  return episodes


def _flags(args: argparse.Namespace, logdir: pathlib.Path) -> list:
  num_envs = args.num_actors * args.env_batch_size
  common = [f'--logdir={logdir}', f'--server_address=unix:{logdir}/learner.sock',
            f'--env_name={args.env_name}', f'--num_envs={num_envs}',
            f'--env_batch_size={args.env_batch_size}', f'--inference_batch_size={num_envs}',
            f'--total_environment_frames={int(args.frame_budget)}',
            '--save_checkpoint_secs=100000', f'--seed={args.seed}']
  # The entry point's defaults (and ppo.gin for PPO), except for what was given.
  return common + _sac_overrides(args)


def _sac_overrides(args: argparse.Namespace) -> list:
  """`--name=value` of each SAC flag of `_SAC_FLAGS` given on the command line, for the
  learner's command line and the printed settings (`main` refuses them with `--agent ppo`)."""
  values = {name: getattr(args, name) for name in _SAC_FLAGS}
  return [f'--{name}={value}' for name, value in values.items() if value is not None]


def _first_reached(episodes: list, window: int, target: float):
  """Frames played when the mean of `window` consecutive returns first reached `target`."""
  returns = [r for r, _ in episodes]
  for end in range(window, len(returns) + 1):
    if sum(returns[end - window:end]) / window >= target:
      return episodes[end - 1][1]
  return None


def run(args: argparse.Namespace, logdir: pathlib.Path) -> dict:
  """Trains until the frame budget or the time limit; returns what happened."""
  learner_log = logdir / 'learner.log'
  start_time = time.time()
  reached, reason, actor_rss = None, 'time limit', 0.
  module = MODULE.format(agent=args.agent)
  with process_group.ProcessGroup(logdir, module, _flags(args, logdir)) as group:
    learner = group.start('learner', ['--run_mode=learner'])
    actors = [group.start(f'actor_{task}', ['--run_mode=actor', f'--task={task}'])
              for task in range(args.num_actors)]
    while time.time() - start_time < 60 * args.max_minutes:
      time.sleep(5)
      actor_rss = max([actor_rss] + [process_group.peak_rss_mb(a.pid) for a in actors])
      if reached is None:
        frames = _first_reached(_episodes(learner_log.read_text()), args.window, args.target)
        reached = None if frames is None else (frames, time.time() - start_time)
      if learner.poll() is not None:
        reason = ('frame budget spent' if learner.returncode == 0 else
                  f'learner exited with {learner.returncode}')
        break
    wall = time.time() - start_time
  text = learner_log.read_text()
  if reason.startswith('learner exited'):
    print(text[-3000:], file=sys.stderr)
  progress = _PROGRESS.findall(text)
  return {'episodes': _episodes(text), 'reached': reached, 'reason': reason, 'wall_s': wall,
          'frames': int(progress[-1]) if progress else 0, 'actor_peak_rss_mb': actor_rss}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--agent', choices=sorted(AGENT_DEFAULTS), default='sac')
  parser.add_argument('--env_name', default='HalfCheetah-v5')
  parser.add_argument('--frame_budget', type=float, default=None)
  parser.add_argument('--max_minutes', type=float, default=120)
  parser.add_argument('--target', type=float, default=None)
  parser.add_argument('--window', type=int, default=5)
  parser.add_argument('--num_actors', type=int, default=None)
  parser.add_argument('--env_batch_size', type=int, default=None)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--logdir', default=None,
                      help='New directory that keeps the logs (default: a temporary one).')
  sac = parser.add_argument_group('SAC only', 'passed to sac_main (default: its own)')
  for name, flag_type in _SAC_FLAGS.items():
    sac.add_argument(f'--{name}', type=flag_type)
  args = parser.parse_args()
  given = _sac_overrides(args)
  if args.agent != 'sac' and given:
    parser.error(f'{" ".join(given)}: SAC flags, which --agent {args.agent} does not take (it '
                 'runs with ppo_main\'s defaults and ppo.gin)')
  for name, value in AGENT_DEFAULTS[args.agent].items():
    if getattr(args, name) is None:
      setattr(args, name, value)

  result = process_group.run_in_logdir(args.logdir, lambda logdir: run(args, logdir))
  settings = f'{args.agent}_main\'s defaults' + (f' with {" ".join(given)}' if given else '')
  print(f'mujoco {args.agent} on {args.env_name}: {args.num_actors} actor(s) x '
        f'{args.env_batch_size} env(s), {settings}')
  episodes = result['episodes']
  for end in range(args.window, len(episodes) + 1, args.window):
    mean = sum(r for r, _ in episodes[end - args.window:end]) / args.window
    print(f'  {episodes[end - 1][1]:8d} frames, {end:5d} episodes: mean return of the last '
          f'{args.window} = {mean:9.1f}')
  if result['reached'] is not None:
    frames, seconds = result['reached']
    print(f'  REACHED mean return >= {args.target:g} at {frames} frames, {seconds:.0f} s')
  else:
    print(f'  target {args.target:g} NOT reached ({result["reason"]})')
  print(f'  {result["frames"]} frames trained on in {result["wall_s"]:.0f} s '
        f'({result["frames"] / max(result["wall_s"], 1e-9):.0f} frames/s); actor peak RSS '
        f'{result["actor_peak_rss_mb"]:.0f} MB')


if __name__ == '__main__':
  main()
