"""Episode statistics: counted in the inference function, reported by the logging thread."""

import collections
import time
from typing import Optional

from absl import logging
import numpy as np
import tensorflow as tf

from seed_rl.common.learner_runtime import env_state
from seed_rl.common.learner_runtime import queues
from seed_rl.common.training import tensors
from seed_rl.common.structures import EnvOutput

# Statistics of one finished episode, and the environment that played it.
EpisodeInfo = collections.namedtuple(
    'EpisodeInfo', 'episode_num_frames episode_returns episode_raw_returns env_ids')


class EpisodeStats(object):
  """Running frames and (raw) returns of every environment's current episode; each finished
  episode goes to a queue that the logging thread drains."""

  def __init__(self, num_envs: int):
    specs = EpisodeInfo(tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.float32),
                        tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int32))
    self._running = env_state.PerEnvState(num_envs, specs[:3], 'episode_stats')
    self._finished = queues.StructuredFIFOQueue(-1, specs)

  @tf.autograph.experimental.do_not_convert
  def reset(self, env_ids) -> None:
    """Forgets the current episodes of `env_ids` (their actor restarted)."""
    self._running.reset(env_ids)

  @tf.autograph.experimental.do_not_convert
  def update(self, env_ids, env_outputs: EnvOutput, raw_rewards,
             num_action_repeats: int) -> None:
    """Adds one step of each env; a `done` flag ends the env's previous episode first.

    The reward that comes with `done` is the last reward of the old episode.
    """
    self._running.add(env_ids, (0, env_outputs.reward, raw_rewards))

    def finish_episodes():
      done_ids = tensors.select_rows(env_ids, env_outputs.done)
      self._finished.enqueue_many(EpisodeInfo(*self._running.read(done_ids), done_ids))
      self._running.reset(done_ids)

    # Few batches end an episode: the others skip reading, queueing and resetting rows.
    tensors.run_if_any(env_outputs.done, finish_episodes)
    self._running.add(env_ids, (num_action_repeats, 0., 0.))

  def dequeue_finished(self) -> EpisodeInfo:
    """numpy EpisodeInfo of the episodes finished since the last call."""
    count = int(self._finished.size())
    if not count:
      return EpisodeInfo(*[np.zeros([0])] * 4)
    return EpisodeInfo(*[t.numpy() for t in self._finished.dequeue_many(count)])

  def close(self) -> None:
    self._finished.close(cancel_pending_enqueues=True)


def _select(infos: EpisodeInfo, mask) -> EpisodeInfo:
  return EpisodeInfo(*[field[mask] for field in infos])


def _concatenate(first: EpisodeInfo, second: EpisodeInfo) -> EpisodeInfo:
  return EpisodeInfo(*[np.concatenate([a, b]) for a, b in zip(first, second)])


def write_episode_summaries(infos: EpisodeInfo, group: int = 1, prefix: str = '') -> None:
  """TensorBoard scalars `{prefix}episode_return`, `..._raw_return`, `..._num_frames`, each point
  the mean of `group` consecutive episodes (a trailing incomplete group is not written)."""
  for start in range(0, len(infos.env_ids) - group + 1, group):
    window = slice(start, start + group)
    tf.summary.scalar(prefix + 'episode_return', np.mean(infos.episode_returns[window]))
    tf.summary.scalar(prefix + 'episode_raw_return', np.mean(infos.episode_raw_returns[window]))
    tf.summary.scalar(prefix + 'episode_num_frames', np.mean(infos.episode_num_frames[window]))


# Seconds between two `Return: ...` lines of the same kind of environment (training, eval).
EPISODE_LINE_PERIOD_SECS = 5.

# An episode line; the label is 'Return', or 'Return (exploring, <how>)' for the training
# environments of an agent that explores (`LearnerAgent.exploration`).
_EPISODE_LINE = '%s: %f Raw return: %f Frames: %i Env id: %i (%s) Iteration: %i'
# Appended to an episode line when episodes finished since the previous line were not shown.
_MORE_EPISODES = (' (+%i more episodes since the last line: mean return %f, mean raw return %f, '
                  'mean frames %.1f)')


def return_label(exploration: Optional[str]) -> str:
  """How an episode line names its return: 'Return', or for episodes that explore (e.g.
  `exploration='epsilon-greedy'`) 'Return (exploring, epsilon-greedy)'."""
  return f'Return (exploring, {exploration})' if exploration else 'Return'


class _EpisodeLines(object):
  """The log lines of one kind of environment, at most one every `period` seconds.

  A line shows the latest finished episode; the episodes finished since the previous line and
  not shown are counted in it with their means (`_MORE_EPISODES`), so that the lines still
  account for every episode (`progress_monitor.parse_episode_returns` reads them back).
  """

  def __init__(self, kind: str, period: float, label: str):
    self._kind = kind
    self._period = period
    self._label = label
    self._latest = None  # (return, raw return, frames, env id, iteration)
    self._skipped = 0
    self._sums = np.zeros(3)  # return, raw return, frames of the skipped episodes
    self._last_line = -np.inf

  def add(self, infos: EpisodeInfo, iteration: int) -> None:
    for frames, episode_return, raw_return, env_id in zip(*infos):
      if self._latest is not None:
        self._skipped += 1
        self._sums += self._latest[:3]
      self._latest = (float(episode_return), float(raw_return), int(frames), int(env_id),
                      iteration)

  def maybe_log(self, now: float, force: bool = False) -> None:
    if self._latest is None or (not force and now - self._last_line < self._period):
      return
    episode_return, raw_return, frames, env_id, iteration = self._latest
    message, args = _EPISODE_LINE, [self._label, episode_return, raw_return, frames, env_id,
                                    self._kind, iteration]
    if self._skipped:
      message += _MORE_EPISODES
      args += [self._skipped] + list(self._sums / self._skipped)
    logging.info(message, *args)
    self._latest, self._skipped, self._sums = None, 0, np.zeros(3)
    self._last_line = now


class EpisodeReporter(object):
  """Writes the summaries of every finished episode and logs them in a few lines.

  Summaries: training environments' episodes averaged in groups of `log_episode_frequency` (an
  incomplete group waits for the next call), evaluation environments' (ids >=
  `num_training_envs`) one by one under `eval/`. Log: one `Return: ...` line per kind of
  environment at most every `line_period` seconds, for the latest episode, with the count and
  mean return of the episodes finished since the previous line (`_EpisodeLines`). With
  `exploration` (the agent's, e.g. 'epsilon-greedy'), the training environments' lines start
  `Return (exploring, epsilon-greedy): ...`: their returns are the exploring behaviour's.
  """

  def __init__(self, num_training_envs: int, log_episode_frequency: int,
               line_period: float = EPISODE_LINE_PERIOD_SECS,
               exploration: Optional[str] = None):
    self._num_training_envs = num_training_envs
    self._group = log_episode_frequency
    self._pending = EpisodeInfo(*[np.zeros([0])] * 4)
    self._lines = {'training': _EpisodeLines('training', line_period, return_label(exploration)),
                   'eval': _EpisodeLines('eval', line_period, return_label(None))}

  def report(self, infos: EpisodeInfo, iteration: int, now: Optional[float] = None) -> None:
    """Logs and writes `infos`; call with a default summary writer and step.

    `now` (`time.monotonic()` by default) decides whether a line is due.
    """
    now = time.monotonic() if now is None else now
    is_eval = infos.env_ids >= self._num_training_envs
    self._lines['training'].add(_select(infos, ~is_eval), iteration)
    self._lines['eval'].add(_select(infos, is_eval), iteration)
    for lines in self._lines.values():
      lines.maybe_log(now)
    training = _concatenate(self._pending, _select(infos, ~is_eval))
    written = len(training.env_ids) - len(training.env_ids) % self._group
    write_episode_summaries(_select(training, slice(0, written)), self._group)
    self._pending = _select(training, slice(written, None))
    write_episode_summaries(_select(infos, is_eval), prefix='eval/')

  def flush(self) -> None:
    """Logs the episodes not shown yet (at the end of training)."""
    for lines in self._lines.values():
      lines.maybe_log(time.monotonic(), force=True)
