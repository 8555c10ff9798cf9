"""Tests of the runtime's stop logic: signals, the training thread, blocked steps."""

import os
import signal
import threading
import time
import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common import actor
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.learner_runtime import lifecycle
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import queues

pytestmark = pytest.mark.timeout(60)

# The grpc_* flags an actor and a learner read, unset.
_NO_SECURITY = dict(grpc_token_file=None, grpc_tls_cert_file=None, grpc_tls_key_file=None,
                    grpc_tls_ca_file=None)


def test_stop_requested_on_signals_sets_the_event_and_restores_handlers():
  before = signal.getsignal(signal.SIGTERM)
  with lifecycle.stop_requested_on_signals() as stop_requested:
    assert not stop_requested.is_set()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop_requested.wait(5)
  assert signal.getsignal(signal.SIGTERM) is before


def test_training_runs_until_done():
  steps = []
  lifecycle.run_training(lambda: steps.append(1), lambda: len(steps) >= 5, threading.Event(),
                         lambda: None)
  assert len(steps) == 5


def test_a_stop_request_releases_a_step_blocked_on_an_empty_queue():
  queue = queues.StructuredFIFOQueue(1, tf.TensorSpec([], tf.int32))
  stop_requested = threading.Event()
  started = threading.Event()

  def train_once():
    started.set()
    queue.dequeue()  # Blocks: nothing is ever enqueued.

  threading.Timer(0.5, stop_requested.set).start()
  begin = time.time()
  lifecycle.run_training(train_once, lambda: False, stop_requested,
                         lambda: queue.close(cancel_pending_enqueues=True))
  assert started.is_set() and time.time() - begin < 10


def test_an_error_of_the_training_thread_is_raised_and_stops_training():
  stop_requested = threading.Event()

  def train_once():
    raise RuntimeError('loss is broken')

  with pytest.raises(RuntimeError, match='loss is broken'):
    lifecycle.run_training(train_once, lambda: False, stop_requested, lambda: None)
  assert stop_requested.is_set()


def test_a_closed_queue_without_a_stop_request_is_an_error():
  queue = queues.StructuredFIFOQueue(1, tf.TensorSpec([], tf.int32))
  queue.close()
  with pytest.raises(tf.errors.OutOfRangeError):
    lifecycle.run_training(queue.dequeue, lambda: False, threading.Event(), lambda: None)



def _serve_and_train_with_a_caller(tmp_path, budget_steps: int,
                                   stop_requested: threading.Event, between_calls: bool = False):
  """Runs `serve_and_train` for `budget_steps` training steps (or until `stop_requested`) with
  one client; returns the error that its last call got and the seconds serving took to end
  after the last training step.

  The client's call waits for a batch that never fills (batches of 2 rows) or, `between_calls`,
  the client is served (batches of 1 row) and calls again 0.3 s after the last training step,
  as an actor stepping its environments does."""
  address = f'unix:{tmp_path}/learner.sock'
  server = grpc.Server([address])
  rows = 1 if between_calls else 2

  @tf.function(input_signature=[tf.TensorSpec([rows], tf.int32)])
  def inference(x):
    return x

  server.bind(inference)
  got = []
  trained = []

  def call():
    client = grpc.Client(address, timeout=30)
    try:
      if between_calls:
        client.inference(np.int32([1]))
        while len(trained) < budget_steps:
          time.sleep(0.01)
        time.sleep(0.3)
      client.inference(np.int32([1]) if between_calls else np.int32(1))
    except Exception as e:  # pylint: disable=broad-except
      got.append(e)
    finally:
      client.close()  # As an actor does before it stops or reconnects.

  caller = threading.Thread(target=call, daemon=True)
  caller.start()

  def train_once():
    time.sleep(0.05)
    trained.append(time.monotonic())

  lifecycle.serve_and_train(
      server, progress_logger.ProgressLogger(), lambda: None, train_once,
      lambda: len(trained) >= budget_steps, stop_requested,
      queues.StructuredFIFOQueue(1, tf.TensorSpec([], tf.int32)), episodes.EpisodeStats(2))
  ended_after = time.monotonic() - trained[-1]
  caller.join(10)
  assert len(got) == 1, got
  return got[0], ended_after


@pytest.mark.parametrize('between_calls', [False, True])
def test_at_the_end_of_training_callers_hear_that_training_finished(tmp_path, between_calls):
  # A caller between two calls hears it too: the server waits for its clients to go.
  error, ended_after = _serve_and_train_with_a_caller(tmp_path, 20, threading.Event(),
                                                      between_calls)
  assert isinstance(error, grpc.TrainingFinishedError), repr(error)
  # The learner waited for its caller to go, not for ACTORS_LEAVE_SECS.
  assert ended_after < lifecycle.ACTORS_LEAVE_SECS


def test_a_stop_request_tells_callers_only_that_the_learner_went_away(tmp_path):
  stop_requested = threading.Event()
  threading.Timer(1., stop_requested.set).start()
  error, _ = _serve_and_train_with_a_caller(tmp_path, 10**6, stop_requested)
  assert isinstance(error, tf.errors.UnavailableError), repr(error)


def test_a_learner_restored_at_its_budget_stops_the_actors_that_wait_for_it(tmp_path):
  config = types.SimpleNamespace(server_address=f'unix:{tmp_path}/learner.sock', task=0,
                                 env_batch_size=1, render=False, double_buffered_acting=False,
                                 **_NO_SECURITY)
  acting = threading.Thread(target=actor.actor_loop, daemon=True,
                            args=(lambda env_id, config: gymnasium.make('CartPole-v1'), config))
  acting.start()  # It waits for a learner at the address.
  time.sleep(0.5)
  lifecycle.answer_training_finished(config, threading.Event())
  acting.join(5)
  assert not acting.is_alive()


def test_a_stop_request_cuts_the_answer_of_a_finished_learner_short(tmp_path):
  config = types.SimpleNamespace(server_address=f'unix:{tmp_path}/learner.sock', **_NO_SECURITY)
  stop_requested = threading.Event()
  stop_requested.set()
  begin = time.monotonic()
  lifecycle.answer_training_finished(config, stop_requested, seconds=60)
  assert time.monotonic() - begin < 10
