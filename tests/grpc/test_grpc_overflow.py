"""A call that does not fit into the current batch waits for the next one: over real gRPC.

The alignment of the original's refusal: with batches of 8, an actor of 4 rows, a stray call of
1 row and another actor of 4 rows, the second actor's call found 3 free rows and was refused
(its actor exited and the others stalled). Now it waits, and every caller gets its outputs once
the rows of full batches arrive.
"""

import concurrent.futures
import time

import numpy as np
import pytest
import tensorflow as tf

pytestmark = pytest.mark.timeout(60)


@tf.function(input_signature=[tf.TensorSpec([8], tf.int32), tf.TensorSpec([8, 2], tf.float32)])
def inference(ids, values):
  return ids * 2, values * 2.


@pytest.fixture
def pool():
  executor = concurrent.futures.ThreadPoolExecutor(8)
  yield executor
  # Without waiting: a failed test's calls end when the server shuts down after this.
  executor.shutdown(wait=False)


def _rows_waiting(server, rows):
  deadline = time.time() + 20
  while True:
    pending = server.pending_batches()
    if pending and pending[0].rows + pending[0].queued_rows == rows:
      return pending[0]
    assert time.time() < deadline, f'{rows} rows never waited: {pending}'
    time.sleep(0.005)


def _call(client, ids):
  ids = np.array(ids, np.int32)
  values = np.stack([ids, -ids], axis=-1).astype(np.float32)
  return client.inference(ids, values)


@pytest.mark.parametrize('address', ['unix', 'tcp'])
def test_a_call_that_does_not_fit_waits_for_the_next_batch(address, servers, clients, pool,
                                                            unix_address, free_port):
  address = unix_address if address == 'unix' else f'localhost:{free_port}'
  server = servers([address])
  server.bind(inference)
  server.start()
  first, stray, second, last = (clients(address) for _ in range(4))
  calls = [pool.submit(_call, first, [0, 1, 2, 3])]
  _rows_waiting(server, 4)
  calls.append(pool.submit(_call, stray, 8))
  _rows_waiting(server, 5)
  calls.append(pool.submit(_call, second, [4, 5, 6, 7]))  # 4 rows, 3 free: it waits.
  pending = _rows_waiting(server, 9)
  assert (pending.rows, pending.queued_rows, pending.queued_callers) == (5, 4, 1)
  assert not any(call.done() for call in calls)
  calls.append(pool.submit(_call, last, [9, 10, 11]))  # The batch is full and runs.
  outputs = [calls[i].result(20) for i in (0, 1, 3)]
  np.testing.assert_array_equal(outputs[0][0], [0, 2, 4, 6])
  np.testing.assert_array_equal(outputs[1][1], [16, -16])
  np.testing.assert_array_equal(outputs[2][0], [18, 20, 22])
  pending = _rows_waiting(server, 4)  # The waiting call is in the next batch.
  assert (pending.rows, pending.queued_rows) == (4, 0)
  calls.append(pool.submit(_call, first, [0, 1, 2, 3]))
  ids, values = calls[2].result(20)
  np.testing.assert_array_equal(ids, [8, 10, 12, 14])
  np.testing.assert_array_equal(values, [[8, -8], [10, -10], [12, -12], [14, -14]])
  np.testing.assert_array_equal(calls[4].result(20)[0], [0, 2, 4, 6])
  assert not server.pending_batches()


def test_shutdown_answers_a_call_waiting_for_the_next_batch(servers, clients, pool, unix_address):
  from seed_rl.grpc import errors  # pylint: disable=g-import-not-at-top
  server = servers([unix_address])
  server.bind(inference)
  server.start()
  calls = [pool.submit(_call, clients(unix_address), ids) for ids in ([0, 1, 2, 3, 4],)]
  _rows_waiting(server, 5)
  calls.append(pool.submit(_call, clients(unix_address), [5, 6, 7, 8]))
  _rows_waiting(server, 9)
  server.shutdown()
  for call in calls:
    with pytest.raises(errors.error_classes(errors.UNAVAILABLE)):
      call.result(20)
