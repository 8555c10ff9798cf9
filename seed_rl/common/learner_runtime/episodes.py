"""Episode statistics: counted in the inference function, reported by the logging thread."""

import collections

from absl import logging
import numpy as np
import tensorflow as tf

from seed_rl.common import env_state
from seed_rl.common import queues
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

  def reset(self, env_ids) -> None:
    """Forgets the current episodes of `env_ids` (their actor restarted)."""
    self._running.reset(env_ids)

  def update(self, env_ids, env_outputs: EnvOutput, raw_rewards,
             num_action_repeats: int) -> None:
    """Adds one step of each env; a `done` flag ends the env's previous episode first.

    The reward that comes with `done` is the last reward of the old episode.
    """
    self._running.add(env_ids, (0, env_outputs.reward, raw_rewards))
    done_ids = tf.boolean_mask(env_ids, env_outputs.done)
    self._finished.enqueue_many(EpisodeInfo(*self._running.read(done_ids), done_ids))
    self._running.reset(done_ids)
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


class EpisodeReporter(object):
  """Logs every finished episode and writes its summaries: training environments' episodes
  averaged in groups of `log_episode_frequency` (an incomplete group waits for the next call),
  evaluation environments' (ids >= `num_training_envs`) one by one under `eval/`."""

  def __init__(self, num_training_envs: int, log_episode_frequency: int):
    self._num_training_envs = num_training_envs
    self._group = log_episode_frequency
    self._pending = EpisodeInfo(*[np.zeros([0])] * 4)

  def report(self, infos: EpisodeInfo, iteration: int) -> None:
    """Logs and writes `infos`; call with a default summary writer and step."""
    is_eval = infos.env_ids >= self._num_training_envs
    for frames, episode_return, raw_return, env_id, evaluating in zip(*infos, is_eval):
      logging.info('Return: %f Raw return: %f Frames: %i Env id: %i (%s) Iteration: %i',
                   episode_return, raw_return, frames, env_id,
                   'eval' if evaluating else 'training', iteration)
    training = _concatenate(self._pending, _select(infos, ~is_eval))
    written = len(training.env_ids) - len(training.env_ids) % self._group
    write_episode_summaries(_select(training, slice(0, written)), self._group)
    self._pending = _select(training, slice(written, None))
    write_episode_summaries(_select(infos, is_eval), prefix='eval/')
