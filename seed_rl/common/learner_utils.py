"""Pieces every learner loop shares: specs, actor-restart detection, checkpoints, the training
thread that a stop request (SIGTERM) interrupts promptly."""

import collections
import threading
import time
from typing import Callable, Optional, Tuple

from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common import utils
from seed_rl.grpc import security


def env_output_specs_for(observation_space) -> utils.EnvOutput:
  """TensorSpecs of one EnvOutput row for an environment's observation space."""
  return utils.EnvOutput(
      reward=tf.TensorSpec([], tf.float32, 'reward'),
      done=tf.TensorSpec([], tf.bool, 'done'),
      observation=utils.tensor_spec_from_gym_space(observation_space, 'observation'),
      abandoned=tf.TensorSpec([], tf.bool, 'abandoned'),
      episode_step=tf.TensorSpec([], tf.int32, 'episode_step'))


def leading_dim_specs(specs, dim: Optional[int]):
  """`specs` with a leading dimension `dim` added to every spec."""
  return tf.nest.map_structure(
      lambda s: tf.TensorSpec([dim] + list(s.shape), s.dtype, s.name), specs)


def specs_without_batch(nest):
  """Specs of one row of a batched nest of tensors."""
  return tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape[1:], t.dtype), nest)


def inference_input_specs(batch_size: int, env_output_specs):
  """input_signature of the inference function: (env_ids, run_ids, env_outputs, raw_rewards)."""
  return (tf.TensorSpec([batch_size], tf.int32, 'env_id'),
          tf.TensorSpec([batch_size], tf.int64, 'run_id'),
          leading_dim_specs(env_output_specs, batch_size),
          tf.TensorSpec([batch_size], tf.float32, 'raw_reward'))


def detect_restarts(env_run_ids: utils.Aggregator, env_ids, run_ids, batch):
  """Finds the environments whose actor (re)started, and drops rows of dead actors.

  A new run id for an environment means a new actor process: the caller resets that
  environment's learner-side state. A dead actor's last call may share an inference batch with
  its successor's first call; its rows are dropped so they cannot touch the new run's state.
  Call inside the inference tf.function; it records the new run ids.

  Args:
    env_run_ids: per-environment run ids (an int64 Aggregator).
    env_ids, run_ids: `[N]` of the inference batch.
    batch: nest of the other `[N, ...]` inputs.

  Returns:
    `(envs_needing_reset, kept_rows <int64>[M, 1], env_ids, batch)`, the last two without the
    dropped rows.
  """
  previous_run_ids = env_run_ids.read(env_ids)
  reset_mask = tf.not_equal(previous_run_ids, run_ids)
  envs_needing_reset = tf.boolean_mask(env_ids, reset_mask)
  kept_mask, kept_env_ids = utils.get_non_dying_envs(envs_needing_reset, reset_mask, env_ids)
  run_ids, batch = tf.nest.map_structure(lambda t: tf.boolean_mask(t, kept_mask),
                                         (run_ids, batch))
  if tf.size(envs_needing_reset) > 0:
    tf.print('Environment ids needing reset:', envs_needing_reset)
  env_run_ids.replace(kept_env_ids, run_ids)
  return envs_needing_reset, tf.where(kept_mask), kept_env_ids, batch


def scatter_rows(kept_rows, values, batch_size: int):
  """Puts the rows computed for the kept rows back into a full batch (zeros elsewhere)."""
  shape = tf.concat([[batch_size], tf.shape(values, tf.int64)[1:]], 0)
  return tf.scatter_nd(kept_rows, values, shape)


def restore_checkpoint(checkpoint: tf.train.Checkpoint, logdir: str,
                       init_checkpoint: Optional[str] = None
                       ) -> Tuple[tf.train.CheckpointManager, bool]:
  """Restores the latest checkpoint in `logdir`, else `init_checkpoint` if given.

  Returns the manager (one checkpoint kept, plus one every 6 hours) and whether `logdir` held a
  checkpoint (the learner then resumes rather than starts).
  """
  manager = tf.train.CheckpointManager(checkpoint, logdir, max_to_keep=1,
                                       keep_checkpoint_every_n_hours=6)
  if manager.latest_checkpoint:
    logging.info('Restoring checkpoint %s', manager.latest_checkpoint)
    checkpoint.restore(manager.latest_checkpoint).assert_consumed()
    return manager, True
  if init_checkpoint:
    logging.info('Loading initial checkpoint from %s...', init_checkpoint)
    checkpoint.restore(init_checkpoint).assert_consumed()
  return manager, False


class PeriodicCheckpointer(object):
  """Calls `save` when `period_secs` passed since the last save (at once if not `resumed`)."""

  def __init__(self, save: Callable[[], None], period_secs: float, resumed: bool):
    self._save = save
    self._period_secs = period_secs
    self._last_save = time.time() if resumed else 0.

  def maybe_save(self) -> None:
    if time.time() - self._last_save >= self._period_secs:
      self._save()
      self._last_save = time.time()


def run_training(train_once: Callable[[], None], is_done: Callable[[], bool],
                 stop_requested: threading.Event, release_blocked: Callable[[], None]) -> None:
  """Runs `train_once` in a thread until `is_done()` or a stop request.

  Training runs in a thread so that the main thread sees a stop request (SIGTERM) at once even
  while a training step waits for data; `release_blocked` then closes the learner's queues so
  that the waiting step ends. Errors of the training thread are re-raised here, except those
  caused by closing the queues on a stop request.
  """
  errors = []

  def loop():
    try:
      while not is_done() and not stop_requested.is_set():
        train_once()
    except Exception as e:  # pylint: disable=broad-except
      # tf.data may re-raise a closed queue's OutOfRangeError as another error class.
      closed = (isinstance(e, (tf.errors.OutOfRangeError, tf.errors.CancelledError,
                               StopIteration)) or 'is closed' in str(e))
      if not (closed and stop_requested.is_set()):
        errors.append(e)
    finally:
      stop_requested.set()

  trainer = threading.Thread(target=loop, name='training', daemon=True)
  trainer.start()
  while not stop_requested.wait(0.5):
    pass
  release_blocked()
  trainer.join()
  if errors:
    raise errors[0]


# Statistics of one finished episode, and the environment that played it.
EpisodeInfo = collections.namedtuple(
    'EpisodeInfo', 'episode_num_frames episode_returns episode_raw_returns env_ids')


class EpisodeStats(object):
  """Running frames and (raw) returns of every environment's current episode; each finished
  episode goes to a queue that the logging thread drains."""

  def __init__(self, num_envs: int):
    specs = EpisodeInfo(tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.float32),
                        tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int32))
    self._running = utils.Aggregator(num_envs, specs[:3], 'episode_stats')
    self._finished = utils.StructuredFIFOQueue(-1, specs)

  def reset(self, env_ids) -> None:
    """Forgets the current episodes of `env_ids` (their actor restarted)."""
    self._running.reset(env_ids)

  def update(self, env_ids, env_outputs: utils.EnvOutput, raw_rewards,
             num_action_repeats: int) -> None:
    """Adds one step of each env; a `done` flag ends the env's previous episode first.

    The reward that comes with `done` is the last reward of the old episode.
    """
    self._running.add(env_ids, (0, env_outputs.reward, raw_rewards))
    done_ids = tf.boolean_mask(env_ids, env_outputs.done)
    self._finished.enqueue_many(EpisodeInfo(*self._running.read(done_ids), done_ids))
    self._running.reset(done_ids)
    self._running.add(env_ids, (num_action_repeats, 0., 0.))

  def dequeue_finished(self, multiple_of: int = 1) -> EpisodeInfo:
    """numpy EpisodeInfo of the finished episodes (a multiple of `multiple_of` of them)."""
    count = int(self._finished.size())
    count -= count % multiple_of
    if not count:
      return EpisodeInfo(*[np.zeros([0])] * 4)
    return EpisodeInfo(*[t.numpy() for t in self._finished.dequeue_many(count)])

  def close(self) -> None:
    self._finished.close(cancel_pending_enqueues=True)


def start_server(config, inference_fns) -> 'grpc.Server':
  """A gRPC server on `config.server_address` serving `inference` (one function per inference
  device, used round robin per batch) and, for flag configs, `get_config` for the actors."""
  server = grpc.Server([config.server_address], **security.server_kwargs_from_config(config))
  server.bind(inference_fns)
  if isinstance(config, flags.FlagValues):

    @tf.function(input_signature=[])
    def get_config():
      return utils.serialize_config(config)

    server.bind(get_config)
  return server


def serve_and_train(server, logger: utils.ProgressLogger, logging_callback: Callable[[], None],
                    train_once: Callable[[], None], is_done: Callable[[], bool],
                    stop_requested: threading.Event, unroll_queue, episode_stats: EpisodeStats
                    ) -> None:
  """Serves the actors and trains until done or stopped, then stops serving.

  A stop request closes the unroll queue, which ends a training step waiting for data and
  inference calls waiting for queue space.
  """
  server.start()
  logger.start(logging_callback)
  try:
    run_training(train_once, is_done, stop_requested,
                 lambda: unroll_queue.close(cancel_pending_enqueues=True))
  finally:
    logger.shutdown()
    server.shutdown()
    episode_stats.close()


def write_episode_summaries(infos: EpisodeInfo, group: int = 1, prefix: str = '') -> None:
  """TensorBoard scalars `{prefix}episode_return`, `..._raw_return`, `..._num_frames`, each point
  the mean of `group` consecutive episodes (a trailing incomplete group is dropped)."""
  for start in range(0, len(infos.env_ids) - group + 1, group):
    window = slice(start, start + group)
    tf.summary.scalar(prefix + 'episode_return', np.mean(infos.episode_returns[window]))
    tf.summary.scalar(prefix + 'episode_raw_return', np.mean(infos.episode_raw_returns[window]))
    tf.summary.scalar(prefix + 'episode_num_frames', np.mean(infos.episode_num_frames[window]))


def log_progress(logger: utils.ProgressLogger, total_environment_frames: float) -> None:
  """The line run_local.sh's progress monitor reads."""
  logging.info('Progress: %d/%d environment frames', int(logger.step_cnt.numpy()),
               int(total_environment_frames))
