"""Limits against memory exhaustion: bytes of requests in flight and concurrent streams.

Real gRPC over a unix socket; the limits are set small so that a few requests reach them.
"""

import concurrent.futures
import inspect
import os
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import call_refusals
from seed_rl.grpc import server as server_lib

ROW_BYTES = 10_000


@tf.function(input_signature=[tf.TensorSpec([4, ROW_BYTES], tf.uint8)])
def rows(x):
  return tf.reduce_sum(tf.cast(x, tf.int32), axis=1)


@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def small(x):
  return x + 1


@tf.function(input_signature=[tf.TensorSpec([3], tf.int32)])
def wait(x):
  return x


@pytest.fixture
def executor():
  pool = concurrent.futures.ThreadPoolExecutor(4)
  yield pool
  pool.shutdown(wait=False, cancel_futures=True)


def _block(n, value=1):
  return np.full([n, ROW_BYTES], value, np.uint8)


@pytest.mark.timeout(30)
def test_defaults_are_documented():
  parameters = inspect.signature(grpc.Server).parameters
  assert parameters['max_bytes_in_flight'].default == server_lib.DEFAULT_MAX_BYTES_IN_FLIGHT
  memory = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
  assert 0 < server_lib.DEFAULT_MAX_BYTES_IN_FLIGHT <= memory // 8
  assert parameters['max_concurrent_streams'].default == 1024
  assert parameters['max_message_length'].default is None
  doc = grpc.Server.__doc__
  assert 'max_bytes_in_flight' in doc and "an eighth of the machine's memory" in doc
  assert 'default 1024' in doc and 'largest request they accept' in doc
  for keyword in ('max_bytes_in_flight', 'max_message_length'):
    with pytest.raises(ValueError, match=keyword):
      grpc.Server(['localhost:0'], **{keyword: 0})


@pytest.mark.timeout(120)
def test_requests_over_the_byte_limit_are_refused_while_small_ones_are_served(
    servers, clients, unix_address, executor):
  limit = 45_000  # Room for 4 rows of 10 kB (and the headers), not for 5.
  server = servers([unix_address], max_bytes_in_flight=limit)
  server.bind(rows)
  server.bind(small)
  server.start()
  waiting, other = clients(unix_address), clients(unix_address)
  pending = executor.submit(waiting.rows, _block(2, 1))  # 20 kB held until the batch is full.
  run = server._run  # pylint: disable=protected-access
  deadline = time.time() + 30
  while run.bytes_in_flight < 2 * ROW_BYTES and time.time() < deadline:
    time.sleep(0.01)
  # 3 more rows would hold 50 kB in all.
  with pytest.raises(tf.errors.ResourceExhaustedError,
                     match=r'already holds 200\d\d bytes .* its limit is 45000 bytes '
                           r'\(Server\(\.\.\., max_bytes_in_flight=45000\)\)') as held:
    other.rows(_block(3))
  # The actor tells it apart as a refusal that the same call passes later.
  assert call_refusals.is_retryable(held.value)
  # A request larger than the limit by itself, which never passes.
  too_large = r'larger than the server\'s limit .* max_bytes_in_flight=45000'
  with pytest.raises(tf.errors.ResourceExhaustedError, match=too_large) as large:
    other.rows(np.zeros([5, ROW_BYTES], np.uint8))
  assert not call_refusals.is_retryable(large.value)
  # Small requests are served meanwhile, on the same stream.
  assert other.small(41) == 42
  assert not pending.done()
  # 2 rows fit: the batch runs, and every byte is released.
  np.testing.assert_array_equal(other.rows(_block(2, 2)), [2 * ROW_BYTES] * 2)
  np.testing.assert_array_equal(pending.result(30), [ROW_BYTES] * 2)
  assert run.bytes_in_flight == 0
  np.testing.assert_array_equal(other.rows(_block(4, 3)), [3 * ROW_BYTES] * 4)


@pytest.mark.timeout(120)
def test_streams_beyond_the_limit_are_refused_with_a_clear_message(
    servers, clients, unix_address, executor):
  server = servers([unix_address], max_concurrent_streams=2)
  server.bind(wait)
  server.start()
  late = clients(unix_address)  # Initialized before the streams are taken; opens none yet.
  a, b = clients(unix_address), clients(unix_address)
  fa = executor.submit(a.wait, 1)  # Both streams stay open, waiting for a third row.
  fb = executor.submit(b.wait, 2)
  deadline = time.time() + 30
  while server._run._streams < 2 and time.time() < deadline:  # pylint: disable=protected-access
    time.sleep(0.01)
  message = r'already serves 2, its limit \(Server\(\.\.\., max_concurrent_streams=2\)\)'
  with pytest.raises(tf.errors.ResourceExhaustedError, match=message):
    grpc.Client(unix_address, timeout=10)
  with pytest.raises(tf.errors.ResourceExhaustedError, match=message):
    late.wait(3)
  assert not fa.done() and not fb.done()
  server.shutdown()
  for f in (fa, fb):
    with pytest.raises(tf.errors.UnavailableError):
      f.result(30)
