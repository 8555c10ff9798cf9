"""Following a learner's log until its episodes reach a target: what the learning benchmarks of
one long run (`learn_football`, `learn_atari`) share."""

import pathlib
import re
import sys
import time
from typing import Any, Optional, Sequence

from bench import process_group
from seed_rl.launch import progress_monitor

_PROGRESS = re.compile(r'Progress: (\d+)/')


def episodes(log_text: str) -> list[tuple[float, int]]:
  """(raw return, environment frames played so far) at the end of every episode the learner's
  log accounts for (`progress_monitor.parse_episodes`), in order; the frames are the sum of the
  lengths of the episodes finished so far."""
  result, frames = [], 0.
  for episode in progress_monitor.parse_episodes(log_text):
    frames += episode.frames
    result.append((episode.raw_return, int(frames)))
  return result


def trained_frames(log_text: str) -> int:
  """The environment frames of the learner's last progress line (0 before the first)."""
  progress = _PROGRESS.findall(log_text)
  return int(progress[-1]) if progress else 0


def follow(learner: Any, learner_log: pathlib.Path, window: int, target: float,
           max_minutes: float) -> dict:
  """Reads the log of the running `learner` (a Popen) every 2 s until the mean raw return of
  `window` consecutive episodes exceeds `target`, the learner exits or `max_minutes` pass.

  Returns a dict: `curve` [(frames played, episodes, mean of the last `window`)] every `window`
  episodes, `reached` (frames played, episodes, seconds, frames trained on) or None, `reason`
  ('target reached', 'frame budget spent', 'learner exited with N' or 'time limit'), `wall_s`,
  `episodes`, `frames` (trained on) and `last_mean` (of the last `window` episodes).
  """
  start_time = time.time()
  curve, reached, reason, checked = [], None, 'time limit', 0
  next_report = window
  while time.time() - start_time < 60 * max_minutes:
    time.sleep(2)
    found = episodes(learner_log.read_text())
    returns = [r for r, _ in found]
    for end in range(next_report, len(found) + 1, window):
      curve.append((found[end - 1][1], end, sum(returns[end - window:end]) / window))
      next_report = end + window
    # The first episode that ends a window of `window` episodes with a mean above target.
    for end in range(max(window, checked + 1), len(found) + 1):
      if sum(returns[end - window:end]) / window > target:
        reached = (found[end - 1][1], end, time.time() - start_time,
                   trained_frames(learner_log.read_text()))
        break
    checked = len(found)
    if reached is not None:
      reason = 'target reached'
      break
    if learner.poll() is not None:
      reason = ('frame budget spent' if learner.returncode == 0 else
                f'learner exited with {learner.returncode}')
      break
  text = learner_log.read_text()
  found = episodes(text)
  last: Optional[float] = (sum(r for r, _ in found[-window:]) / min(window, len(found))
                           if found else float('nan'))
  return {'reached': reached, 'reason': reason, 'wall_s': time.time() - start_time,
          'episodes': len(found), 'frames': trained_frames(text), 'curve': curve,
          'last_mean': last}


def train_and_follow(logdir: pathlib.Path, module: str, flags: Sequence[str], num_actors: int,
                     window: int, target: float, max_minutes: float,
                     env: Optional[dict] = None) -> dict:
  """Starts the learner and `num_actors` actors of `module` with `flags` (and the environment
  variables `env`) in `logdir`, then `follow`s the learner; the end of the log of a learner that
  failed goes to stderr."""
  learner_log = logdir / 'learner.log'
  with process_group.ProcessGroup(logdir, module, flags, env) as group:
    learner = group.start('learner', ['--run_mode=learner'])
    for task in range(num_actors):
      group.start(f'actor_{task}', ['--run_mode=actor', f'--task={task}'],
                  {'CUDA_VISIBLE_DEVICES': ''})
    result = follow(learner, learner_log, window, target, max_minutes)
  if result['reason'].startswith('learner exited'):
    print(learner_log.read_text()[-3000:], file=sys.stderr)
  return result


def print_result(result: dict, window: int, target: float) -> None:
  """Prints the curve of `follow`'s result and whether and when the target was reached."""
  for frames, count, mean in result['curve']:
    print(f'  {frames:9d} frames, {count:6d} episodes: mean return of the last '
          f'{window} = {mean:.2f}')
  if result['reached'] is not None:
    frames, count, seconds, trained = result['reached']
    print(f'  REACHED mean return > {target:g} over {window} episodes after '
          f'{frames} environment frames ({count} episodes; {trained} frames trained on) in '
          f'{seconds:.0f} s wall time')
  else:
    print(f'  NOT reached ({result["reason"]}): {result["frames"]} frames trained on, '
          f'{result["episodes"]} episodes, last mean return {result["last_mean"]:.2f}, '
          f'{result["wall_s"]:.0f} s wall time')
