"""Tests of the runtime's stop logic: signals, the training thread, blocked steps."""

import os
import signal
import threading
import time

import pytest
import tensorflow as tf

from seed_rl.common import queues
from seed_rl.common.learner_runtime import lifecycle

pytestmark = pytest.mark.timeout(60)


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
