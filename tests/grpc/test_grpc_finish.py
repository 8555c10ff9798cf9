"""`Server.finish`: the clients hear that the server's work is done for good (real gRPC, real
TensorFlow). That a mere `shutdown` tells them only that the server went away is in
test_grpc_ops (test_shutdown_while_waiting_for_batch)."""

import concurrent.futures
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import errors
from tests import processes

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def pool():
  with concurrent.futures.ThreadPoolExecutor(4) as executor:
    yield executor


@tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
def batched(x):
  return x + 1


def _started(servers, address, fn=batched):
  server = servers([address])
  server.bind(fn)
  server.start()
  return server


def test_finish_answers_waiting_and_later_calls_and_new_clients(servers, clients, unix_address,
                                                                pool):
  server = _started(servers, unix_address)
  waiting, later = clients(unix_address), clients(unix_address)
  future = pool.submit(waiting.batched, np.int32(1))  # Waits for a second row.
  processes.wait_until(lambda: server.pending_batches(), 10.)
  server.finish()
  with pytest.raises(grpc.TrainingFinishedError, match='^Training finished: '):
    future.result(10)
  with pytest.raises(grpc.TrainingFinishedError):
    later.batched(np.int32(1))
  with pytest.raises(grpc.TrainingFinishedError, match='Init of the client'):
    grpc.Client(unix_address, timeout=10)
  # Whoever catches OUT_OF_RANGE errors of seed_rl catches it too; it is not an UNAVAILABLE.
  assert issubclass(grpc.TrainingFinishedError, errors.OutOfRangeError)
  assert not issubclass(grpc.TrainingFinishedError, errors.error_classes(errors.UNAVAILABLE))


def test_finish_answers_an_execution_that_ends_after_it_instead_of_its_error(
    servers, clients, unix_address, pool):
  # The learner finishes, then closes the queue that blocks its inference: the caller must
  # hear "finished", not the closed queue's CANCELLED (on which an actor reconnects).
  queue = tf.queue.FIFOQueue(1, [tf.int32], [[]])

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def block(x):
    queue.enqueue(x)
    queue.enqueue(x)  # Blocks: the queue holds one element.
    return x

  server = _started(servers, unix_address, block)
  future = pool.submit(clients(unix_address).block, np.int32(1))
  processes.wait_until(lambda: queue.size().numpy() == 1, 10.)
  server.finish()
  queue.close(cancel_pending_enqueues=True)
  with pytest.raises(grpc.TrainingFinishedError):
    future.result(10)


def test_an_out_of_range_error_of_the_function_is_not_the_end_of_training(servers, clients,
                                                                          unix_address):
  queue = tf.queue.FIFOQueue(1, [tf.int32], [[]])
  queue.close()

  @tf.function(input_signature=[])
  def dequeue():
    return queue.dequeue()  # OUT_OF_RANGE: the queue is closed and empty.

  _started(servers, unix_address, dequeue)
  with pytest.raises(tf.errors.OutOfRangeError) as raised:
    clients(unix_address).dequeue()
  assert not isinstance(raised.value, grpc.TrainingFinishedError)


def test_a_server_finished_before_it_starts_needs_no_function(servers, unix_address):
  server = servers([unix_address])
  server.finish()
  server.start()
  with pytest.raises(grpc.TrainingFinishedError):
    grpc.Client(unix_address, timeout=10)
  server.shutdown()
  server.start()  # Finished for good.
  with pytest.raises(grpc.TrainingFinishedError):
    grpc.Client(unix_address, timeout=10)


def test_wait_for_clients_to_leave_waits_for_open_streams(servers, clients, unix_address):
  server = _started(servers, unix_address)
  client = clients(unix_address)
  assert server.wait_for_clients_to_leave(0.)  # No stream yet: Init opens none.
  server.finish()
  with pytest.raises(grpc.TrainingFinishedError):
    client.batched(np.int32(1))  # The call opened the client's stream.
  begin = time.monotonic()
  assert not server.wait_for_clients_to_leave(0.3)
  assert time.monotonic() - begin >= 0.3
  threading.Timer(0.2, client.close).start()
  assert server.wait_for_clients_to_leave(10)

