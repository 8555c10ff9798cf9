r"""Live progress line of a running learner, read from its log (used by run_local.sh).

  python -m seed_rl.launch.progress_monitor --log /tmp/seed_rl/gym_vtrace/logs/learner.log

Shows environment frames done and budgeted, frames/s, the mean return of the recent training
episodes (of exploring episodes, as the learner's lines say, for an agent that explores: R2D2's
are epsilon-greedy) and the time left at the current speed, or what the learner waits for before
its first training step. It reads the learner's 'Progress: F/T environment frames', 'Return: R
...' or 'Return (exploring, epsilon-greedy): R ...' (see `parse_episodes`), 'Waiting for the
first training step: ...' and starvation lines, so it needs no TensorFlow. It ends with the
learner's line saying that training finished, with the status `EXIT_TRAINING_FINISHED`
(run_local.sh then stops TensorBoard while the learner exits), or with status 0 when the process
`--pid` exits before that line.
"""

import argparse
import collections
import os
import re
import sys
import time
from typing import Deque, List, NamedTuple, Optional, Tuple

PROGRESS = re.compile(r'Progress: (\d+)/(\d+) environment frames')
_NUMBER = r'(-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf|nan))'
# An episode line of the learner (`learner_runtime.episodes`): the latest episode, then, when
# episodes finished since the previous line were not shown, their count and means. Its label
# says how the episodes explored, if they did: 'Return (exploring, epsilon-greedy): R ...'.
RETURN = re.compile(r'\] Return(?: \(exploring, ([^)]*)\))?: ' + _NUMBER + ' Raw return: ' +
                    _NUMBER + r' Frames: (\d+)')
_KIND = re.compile(r' \((training|eval)\)')
_MORE = re.compile(r'\(\+(\d+) more episodes since the last line: mean return ' + _NUMBER +
                   ', mean raw return ' + _NUMBER + ', mean frames ' + _NUMBER + r'\)')
WAITING = re.compile(r'Waiting for the first training step: (.*)$')
STARVED = re.compile(r'Inference starved')
FED = re.compile(r'Inference batches fill again')
FINISHED = re.compile(r'(Training (?:already )?finished at .*)$')
# The monitor's exit status once it saw the learner's line saying that training finished: not 0
# (the learner exited first), nor a Python error's 1 or argparse's 2.
EXIT_TRAINING_FINISHED = 3


class Episode(NamedTuple):
  """A finished episode as the learner's log accounts for it."""
  episode_return: float
  raw_return: float
  frames: float


class _EpisodeLine(NamedTuple):
  """What a learner's episode line says, read once for all its readers."""
  kind: Optional[str]  # 'training', 'eval' or None (not said).
  exploration: Optional[str]  # How the episodes explored (e.g. 'epsilon-greedy'); None: policy.
  episodes: List[Episode]  # Oldest first (see `episodes_of_line`).


def _parse_episode_line(line: str) -> Optional[_EpisodeLine]:
  """The episode line `line` parsed; None for other lines."""
  match = RETURN.search(line)
  if not match:
    return None
  rest = line[match.end():]
  kind = _KIND.search(rest)
  more = _MORE.search(rest)
  episodes = []
  if more:
    episodes = [Episode(*(float(more.group(g)) for g in (2, 3, 4)))] * int(more.group(1))
  shown = Episode(float(match.group(2)), float(match.group(3)), float(match.group(4)))
  return _EpisodeLine(kind.group(1) if kind else None, match.group(1), episodes + [shown])


def episodes_of_line(line: str) -> Tuple[Optional[str], List[Episode]]:
  """`(kind, episodes)` of one learner log line: kind 'training', 'eval' or None (not said).

  The episodes the line accounts for, oldest first: those it counts without showing them (each
  given their means), then the episode it shows. Empty for other lines.
  """
  parsed = _parse_episode_line(line)
  return (parsed.kind, parsed.episodes) if parsed else (None, [])


def parse_episodes(text: str, kind: Optional[str] = None) -> List[Episode]:
  """The episodes a learner log accounts for, in order (see `episodes_of_line`).

  The learner logs one line per kind of environment every few seconds; the episodes a line does
  not show stand in with their means, so the sums and means over any run of lines are exact,
  and so is the number of episodes. `kind`: 'training' or 'eval' to keep only those; None
  keeps all.
  """
  episodes = []
  for line in text.splitlines():
    line_kind, line_episodes = episodes_of_line(line)
    if kind is None or line_kind == kind:
      episodes.extend(line_episodes)
  return episodes


def parse_episode_returns(text: str, kind: Optional[str] = None) -> List[float]:
  """The returns of `parse_episodes(text, kind)`."""
  return [episode.episode_return for episode in parse_episodes(text, kind)]


class LogFollower(object):
  """Incrementally reads the lines appended to a log file."""

  def __init__(self, path: str):
    self._path = path
    self._offset = 0
    self._partial = ''

  def new_lines(self):
    try:
      with open(self._path, 'r', errors='replace') as f:
        f.seek(self._offset)
        data = f.read()
        self._offset = f.tell()
    except FileNotFoundError:
      return []
    lines = (self._partial + data).split('\n')
    self._partial = lines.pop()
    return lines


class Progress(object):
  """Frames, speed, returns and what training waits for, parsed from learner log lines."""

  def __init__(self, num_returns: int = 20):
    self.frames: Optional[int] = None
    self.total: Optional[int] = None
    self.returns: Deque[float] = collections.deque(maxlen=num_returns)
    # How the episodes of `returns` explored (e.g. 'epsilon-greedy'), as their lines said.
    self.exploration: Optional[str] = None
    self.status: Optional[str] = None  # What the learner waits for, if it said so.
    self.finished: Optional[str] = None  # The learner's line saying training ended.
    self._samples: Deque[Tuple[float, int]] = collections.deque(maxlen=30)

  def update(self, lines, now: float) -> None:
    for line in lines:
      match = PROGRESS.search(line)
      if match:
        self.frames, self.total = int(match.group(1)), int(match.group(2))
        self._samples.append((now, self.frames))
        self.status = None
        continue
      episode_line = _parse_episode_line(line)
      if episode_line:
        if episode_line.kind != 'eval':  # Evaluation episodes are not training returns.
          self.returns.extend(
              e.episode_return for e in episode_line.episodes[-self.returns.maxlen:])
          self.exploration = episode_line.exploration
        continue
      match = FINISHED.search(line)
      if match:
        self.finished = match.group(1)
        continue
      match = WAITING.search(line)
      if match:
        self.status = match.group(1)
      elif STARVED.search(line):
        self.status = 'inference starved: too few actors? (see the learner log)'
      elif FED.search(line):
        self.status = None

  def frames_per_second(self) -> Optional[float]:
    if len(self._samples) < 2:
      return None
    (t0, f0), (t1, f1) = self._samples[0], self._samples[-1]
    return (f1 - f0) / (t1 - t0) if t1 > t0 else None

  def line(self) -> str:
    if self.finished:
      return self.finished
    if self.frames is None:
      waiting = 'waiting for the first training step'
      return f'{waiting}: {self.status}' if self.status else f'{waiting}...'
    parts = [f'frames {self.frames:,}/{self.total:,} ({100 * self.frames / self.total:.1f}%)']
    speed = self.frames_per_second()
    if speed:
      parts.append(f'{speed:,.0f} frames/s')
    if self.returns:
      episodes = (f'exploring episodes, {self.exploration}' if self.exploration else
                  'episodes')
      parts.append(f'return {sum(self.returns) / len(self.returns):.2f} '
                   f'(mean of the last {len(self.returns)} {episodes})')
    if speed:
      seconds = max(0, self.total - self.frames) / speed
      parts.append(f'ETA {int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m'
                   f'{int(seconds % 60):02d}s')
    if self.status:
      parts.append(self.status)
    return ' | '.join(parts)


def _alive(pid: Optional[int]) -> bool:
  if pid is None:
    return True
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    pass
  return True


def main() -> None:
  """Shows the progress line until training finished or the learner exited; exits with
  `EXIT_TRAINING_FINISHED` in the first case."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--log', required=True, help='the learner log file')
  parser.add_argument('--pid', type=int, help='stop when this process (the learner) exits')
  parser.add_argument('--period', type=float, default=2.0, help='seconds between updates')
  args = parser.parse_args()

  follower, progress = LogFollower(args.log), Progress()
  interactive = sys.stdout.isatty()
  last_print = 0.0
  while _alive(args.pid):
    now = time.time()
    progress.update(follower.new_lines(), now)
    if interactive:
      sys.stdout.write('\r\033[K' + progress.line())
      sys.stdout.flush()
    elif now - last_print >= 10 * args.period or progress.finished:
      print(progress.line(), flush=True)
      last_print = now
    if progress.finished:  # The learner said how training ended (e.g. no --pid in tmux).
      break
    time.sleep(args.period)
  if interactive:
    sys.stdout.write('\n')
  if progress.finished:
    sys.exit(EXIT_TRAINING_FINISHED)


if __name__ == '__main__':
  main()
