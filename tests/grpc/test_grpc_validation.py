"""Per-caller validation of argument values (`Server.bind(fn, validate=...)`), over real gRPC.

A validator refuses one caller before its rows join a batch; the batch runs for the others.
"""

import concurrent.futures
import logging
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc


def _make_step():
  """A batched function of 4 rows and a counter of its executions."""
  runs = tf.Variable(0)

  @tf.function(input_signature=[tf.TensorSpec([4], tf.int32),
                                tf.TensorSpec([4, 2], tf.float32)])
  def step(env_ids, observations):
    runs.assign_add(1)
    return env_ids * 10, tf.reduce_sum(observations, axis=1)

  return step, runs


class CountingValidator:
  """Refuses negative env ids; records the shapes and dtypes of every call (thread-safe)."""

  def __init__(self):
    self.calls = []
    self.threads = set()
    self._lock = threading.Lock()

  def __call__(self, arrays):
    with self._lock:
      self.calls.append([(a.shape, a.dtype.str, a.flags.writeable) for a in arrays])
      self.threads.add(threading.current_thread().name)
    if (arrays[0] < 0).any():
      raise ValueError(f'negative env id in {arrays[0].tolist()}')


def _obs(rows):
  return np.ones([rows, 2], np.float32)


@pytest.fixture
def executor():
  pool = concurrent.futures.ThreadPoolExecutor(4)
  yield pool
  pool.shutdown(wait=False, cancel_futures=True)


@pytest.mark.timeout(120)
def test_invalid_caller_is_refused_alone_and_the_batch_runs_for_the_others(
    servers, clients, unix_address, executor):
  step, runs = _make_step()
  validator = CountingValidator()
  server = servers([unix_address])
  server.bind(step, validate=validator)
  server.start()
  good, bad = clients(unix_address), clients(unix_address)
  pending = executor.submit(good.step, np.array([0, 1], np.int32), _obs(2))
  time.sleep(0.3)  # Its rows wait in the batch for two more.
  with pytest.raises(tf.errors.InvalidArgumentError, match=r'negative env id in \[-1, 2\]'):
    bad.step(np.array([-1, 2], np.int32), _obs(2))
  assert not pending.done()
  assert runs.numpy() == 0
  # The refused caller's rows never joined the batch: two valid rows complete it.
  ids, sums = bad.step(np.array([2, 3], np.int32), _obs(2))
  np.testing.assert_array_equal(ids, [20, 30])
  np.testing.assert_allclose(sums, [2, 2])
  ids, sums = pending.result(30)
  np.testing.assert_array_equal(ids, [0, 10])
  assert runs.numpy() == 1
  # Once per request, with read-only views shaped as sent, on the server's handler threads.
  assert validator.calls == [[((2,), '<i4', False), ((2, 2), '<f4', False)]] * 3
  assert all(name.startswith('seed_rl_grpc') for name in validator.threads)


@pytest.mark.timeout(120)
def test_validator_sees_single_elements_and_direct_calls(servers, clients, unix_address):
  step, runs = _make_step()
  validator = CountingValidator()
  server = servers([unix_address])
  server.bind(step, validate=validator)
  server.start()
  client = clients(unix_address)
  # A full batch is a direct call: validated too.
  with pytest.raises(tf.errors.InvalidArgumentError, match='negative env id'):
    client.step(np.array([0, 1, 2, -3], np.int32), _obs(4))
  ids, _ = client.step(np.array([0, 1, 2, 3], np.int32), _obs(4))
  np.testing.assert_array_equal(ids, [0, 10, 20, 30])
  # A single element (no batch dimension) arrives as sent.
  with pytest.raises(tf.errors.InvalidArgumentError, match=r'negative env id in -5'):
    client.step(np.int32(-5), np.ones([2], np.float32))
  assert [[shape for shape, _, _ in call] for call in validator.calls] == [
      [(4,), (4, 2)], [(4,), (4, 2)], [(), (2,)]]
  assert runs.numpy() == 1


@pytest.mark.timeout(120)
def test_validators_run_concurrently_outside_the_batch_lock(servers, clients, unix_address,
                                                            executor):
  """Two callers' validators meet at a barrier: a validator serialized by a lock would time out
  there (BrokenBarrierError, hence INTERNAL) instead of letting both callers through."""
  step, runs = _make_step()
  barrier = threading.Barrier(2, timeout=20)
  calls = []

  def slow(arrays):
    calls.append(arrays[0].tolist())
    barrier.wait()

  server = servers([unix_address])
  server.bind(step, validate=slow)
  server.start()
  a, b = clients(unix_address), clients(unix_address)
  fa = executor.submit(a.step, np.array([0, 1], np.int32), _obs(2))
  fb = executor.submit(b.step, np.array([2, 3], np.int32), _obs(2))
  np.testing.assert_array_equal(fa.result(60)[0], [0, 10])
  np.testing.assert_array_equal(fb.result(60)[0], [20, 30])
  assert sorted(calls) == [[0, 1], [2, 3]]
  assert runs.numpy() == 1


@pytest.mark.timeout(120)
def test_broken_validator_is_internal_for_its_caller_and_logged_once(
    servers, clients, unix_address, caplog):
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32), tf.TensorSpec([], tf.string)])
  def direct(x, s):
    return tf.reduce_sum(x), tf.strings.join([s, '!'])

  def validate(arrays):
    x, s = arrays
    if s[()] == b'bug':
      raise KeyError('no such key')
    if s[()] == b'bad':
      raise ValueError('s must not be bad')
    if x.sum() > 100:
      raise ValueError('')  # No message: the server says which validator refused.

  caplog.set_level(logging.INFO)
  server = servers([unix_address])
  server.bind(direct, validate=validate)
  server.start()
  client = clients(unix_address)
  for _ in range(3):
    with pytest.raises(tf.errors.InternalError, match="validator of direct failed: KeyError"):
      client.direct(np.array([1, 2], np.int32), 'bug')
  with pytest.raises(tf.errors.InvalidArgumentError, match='^s must not be bad$'):
    client.direct(np.array([1, 2], np.int32), 'bad')
  with pytest.raises(tf.errors.InvalidArgumentError, match='validator of direct refused'):
    client.direct(np.array([100, 2], np.int32), 'ok')
  assert client.direct(np.array([1, 2], np.int32), 'ok') == (3, b'ok!')
  logged = [r for r in caplog.records if r.name.startswith('seed_rl.grpc')]
  assert len(logged) == 1, [r.getMessage() for r in logged]
  assert 'validator of direct raised KeyError' in logged[0].getMessage()
  assert logged[0].exc_info is not None and logged[0].exc_info[0] is KeyError


@pytest.mark.timeout(60)
def test_validate_must_be_callable():
  step, _ = _make_step()
  with pytest.raises(TypeError, match='validate must be callable'):
    grpc.Server(['localhost:0']).bind(step, validate=42)


@pytest.mark.timeout(120)
def test_validator_sees_the_stream_of_each_caller_and_when_it_closed(
    servers, clients, unix_address):
  from seed_rl.grpc import caller  # pylint: disable=g-import-not-at-top
  seen = []

  def remember_stream(arrays):
    del arrays
    seen.append(caller.current())

  @tf.function(input_signature=[tf.TensorSpec([1], tf.int32)])
  def echo(x):
    return x

  server = servers([unix_address])
  server.bind(echo, validate=remember_stream)
  server.start()
  first, second = clients(unix_address), clients(unix_address)
  first.echo(np.array([1], np.int32))
  first.echo(np.array([2], np.int32))
  second.echo(np.array([3], np.int32))
  assert seen[0] is seen[1] and seen[1] is not seen[2]
  assert not any(stream.closed for stream in seen)
  assert caller.current() is None  # Not on a handler thread.
  first.close()
  deadline = time.monotonic() + 30
  while not seen[0].closed and time.monotonic() < deadline:
    time.sleep(0.01)
  assert seen[0].closed and not seen[2].closed
