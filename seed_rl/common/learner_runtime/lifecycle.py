"""The learner's lifecycle: serve the actors and train until done or asked to stop.

A stop request (SIGTERM from a preemption or stop_local.sh, Ctrl-C) must end training within
seconds and still leave a checkpoint, even while a training step waits for data: training runs
in its own thread and the main thread closes the learner's queues to release it.

How serving ends tells the actors what to do. At the end of training (the frame budget spent)
the learner answers every call with "training finished" (`grpc.Server.finish`) and waits a few
seconds for its actors to hear it and go: they stop. A learner that stops for any other reason
(a stop request, an error) just shuts its server down: its actors keep reconnecting, so that a
restarted learner gets them back. A learner restored at the end of its budget serves that answer
alone for a moment (`answer_training_finished`), for the actors that wait for it.
"""

import contextlib
import signal
import threading
from typing import Any, Callable

from absl import logging
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common.config import transfer
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.grpc import address_list
from seed_rl.grpc import security

# Seconds a learner that finished training waits for its actors to hear it and close their
# streams (each is at most one environment step from its next call) before it shuts down.
ACTORS_LEAVE_SECS = 5.
# Seconds a learner restored at the end of its budget answers that training finished: actors
# waiting for it try to connect every 0.5 s.
FINISHED_ANSWER_SECS = 3.


@contextlib.contextmanager
def stop_requested_on_signals(signals=(signal.SIGTERM, signal.SIGINT)):
  """Yields an Event that SIGTERM/SIGINT set instead of killing the process.

  Learners poll it to checkpoint and stop cleanly (preemption, Ctrl-C, stop_local.sh). The
  previous handlers come back on exit. Outside the main thread (where Python cannot install
  handlers) the event is only set by the caller.
  """
  stop_requested = threading.Event()

  def request_stop(signum, unused_frame):
    logging.info('Signal %d received: checkpointing and stopping.', signum)
    stop_requested.set()

  previous_handlers = {}
  if threading.current_thread() is threading.main_thread():
    for signum in signals:
      previous_handlers[signum] = signal.signal(signum, request_stop)
  try:
    yield stop_requested
  finally:
    for signum, handler in previous_handlers.items():
      signal.signal(signum, handler)


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
      # A closed queue's OutOfRangeError may surface as another error class.
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


def _new_server(config) -> 'grpc.Server':
  """A server on every address of `config.server_address` (a comma-separated list, e.g. gRPC
  for remote actors and `shm:NAME` for those on this machine: `address_list`) with the security
  of the grpc_* flags."""
  return grpc.Server(address_list.split(config.server_address),
                     **security.SecurityFiles(
                         token_file=config.grpc_token_file,
                         tls_cert_file=config.grpc_tls_cert_file,
                         tls_key_file=config.grpc_tls_key_file).server_kwargs())


def start_server(config: Any, inference_fns: Any,
                 validate: Callable[[Any], None]) -> 'grpc.Server':
  """A gRPC server on `config.server_address` serving `inference` (one function per inference
  device, used round robin per batch; `validate` checks each request before it joins a batch)
  and, for a config read from flags, `get_config`: the actors receive the learner's flags that
  were given or differ from their defaults (`transfer`).

  Args:
    config: the learner's `LearnerConfig`.
    inference_fns: the inference functions, one per inference device.
    validate: checks each request before it joins a batch.
  """
  server = _new_server(config)
  server.bind(inference_fns, validate=validate)
  if config.flag_values is not None:
    flag_values = config.flag_values

    @tf.function(input_signature=[], autograph=False)
    def get_config():
      return transfer.serialize_config(flag_values)

    server.bind(get_config)
  return server


def serve_and_train(server: 'grpc.Server', logger: progress_logger.ProgressLogger,
                    logging_callback: Callable[[], None], train_once: Callable[[], None],
                    is_done: Callable[[], bool], stop_requested: threading.Event, unroll_queue,
                    episode_stats: episodes.EpisodeStats) -> None:
  """Serves the actors and trains until done or stopped, then stops serving.

  The end of training or a stop request closes the unroll queue, which ends a training step
  waiting for data and inference calls waiting for queue space. At the end of training the
  actors first get "training finished", instead of the queue's error, and a few seconds to go
  (see the module docstring).
  """
  server.start()
  logger.start(logging_callback)
  finished = False

  def release_blocked():
    nonlocal finished
    finished = is_done()
    if finished:
      server.finish()
    unroll_queue.close(cancel_pending_enqueues=True)

  try:
    run_training(train_once, is_done, stop_requested, release_blocked)
  finally:
    logger.shutdown()
    if finished and not server.wait_for_clients_to_leave(ACTORS_LEAVE_SECS):
      logging.warning('Actors still connected %.0f s after training finished; stopping anyway.',
                      ACTORS_LEAVE_SECS)
    server.shutdown()
    episode_stats.close()


def answer_training_finished(config, stop_requested: threading.Event,
                             seconds: float = FINISHED_ANSWER_SECS) -> None:
  """Answers "training finished" on `config.server_address` for `seconds` or until a stop
  request: the actors that wait for a learner restored at the end of its budget hear it and
  stop. Says so in a warning, and returns, when the address cannot be served."""
  server = _new_server(config)
  server.finish()
  try:
    server.start()
  except tf.errors.UnavailableError as e:
    logging.warning('Cannot tell waiting actors that training finished: %s', e.message)
    return
  try:
    stop_requested.wait(seconds)
  finally:
    server.shutdown()
