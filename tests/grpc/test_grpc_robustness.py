"""A bad or hostile client never disturbs good ones, crashes or hangs the server.

Malformed requests go over raw gRPC streams (bytes of our choosing, not through `Client`).
"""

import asyncio
import concurrent.futures
import queue
import threading
import time

import grpc as grpcio
import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import codec
from seed_rl.grpc import errors
from seed_rl.grpc import service_pb2
from tests.grpc import reference_encoding

CALL = '/seed_rl.TensorService/Call'


class RawStream:
  """A Call stream that sends raw bytes and returns raw CallResponses."""

  def __init__(self, address, max_message_length=256 * 1024 * 1024):
    self.channel = grpcio.insecure_channel(address, options=[
        ('grpc.max_send_message_length', max_message_length),
        ('grpc.max_receive_message_length', max_message_length)])
    self.requests = queue.SimpleQueue()
    self.responses = self.channel.stream_stream(
        CALL, request_serializer=None,
        response_deserializer=service_pb2.CallResponse.FromString)(
            iter(self.requests.get, None), wait_for_ready=True)

  def send(self, data: bytes) -> service_pb2.CallResponse:
    self.requests.put(data)
    return next(self.responses)

  def close(self):
    self.requests.put(None)
    self.responses.cancel()
    self.channel.close()


@pytest.fixture
def raw_streams():
  made = []

  def make(address, **kwargs):
    stream = RawStream(address, **kwargs)
    made.append(stream)
    return stream

  yield make
  for stream in made:
    stream.close()


def _request(function, *arrays) -> bytes:
  return reference_encoding.call_request(function, list(arrays)).SerializeToString()


@tf.function(input_signature=[tf.TensorSpec([4], tf.int32), tf.TensorSpec([4, 3], tf.float32)])
def pair(x, y):
  return x + 1, tf.reduce_sum(y, axis=1)


@tf.function(input_signature=[tf.TensorSpec([1], tf.int32)])
def single(x):
  return x * 2


@tf.function(input_signature=[tf.TensorSpec([2], tf.int32), tf.TensorSpec([], tf.string)])
def direct(x, s):
  return tf.reduce_sum(x), tf.strings.join([s, '!'])


def _malformed(max_message_length):
  good_pair = (np.array([1, 2], np.int32), np.ones([2, 3], np.float32))
  return [
      ('undecodable bytes', b'\xff\xfe\x00garbage', errors.INVALID_ARGUMENT,
       'Cannot parse CallRequest'),
      ('unknown method', _request('nope', 1), errors.INTERNAL, 'Function nope not found'),
      ('wrong arg count', _request('pair', good_pair[0]), errors.INVALID_ARGUMENT,
       'Expects 2 arguments, but 1 is provided'),
      ('wrong shape', _request('pair', good_pair[0], np.ones([2, 4], np.float32)),
       errors.INVALID_ARGUMENT, 'suffix [3]'),
      ('wrong rank', _request('pair', np.zeros([2, 2, 2], np.int32), good_pair[1]),
       errors.INVALID_ARGUMENT, 'dimension(s)'),
      ('wrong dtype', _request('pair', good_pair[0].astype(np.int64), good_pair[1]),
       errors.INVALID_ARGUMENT, 'to be int32 but int64 is provided'),
      ('wrong batch dim', _request('pair', good_pair[0], np.ones([3, 3], np.float32)),
       errors.INVALID_ARGUMENT, 'batching dimension 2'),
      ('too many rows', _request('pair', np.zeros(5, np.int32), np.ones([5, 3], np.float32)),
       errors.INVALID_ARGUMENT, 'does not fit'),
      ('short content', service_pb2.CallRequest(function='pair', tensor=[
          service_pb2.Tensor(dtype=service_pb2.DT_INT32, shape=[2], content=b'\0' * 5),
          service_pb2.Tensor(dtype=service_pb2.DT_FLOAT, shape=[2, 3], content=b'\0' * 24),
      ]).SerializeToString(), errors.INVALID_ARGUMENT, 'Cannot parse tensor'),
      ('unknown dtype', service_pb2.CallRequest(function='direct', tensor=[
          service_pb2.Tensor(dtype=77, shape=[2], content=b'\0' * 8),
          service_pb2.Tensor(dtype=service_pb2.DT_STRING, shape=[], string_val=[b'a']),
      ]).SerializeToString(), errors.INVALID_ARGUMENT, 'arg[0] to be int32'),
      ('over-size', b'\0' * (max_message_length + 1), errors.RESOURCE_EXHAUSTED, None),
  ]


@pytest.mark.timeout(120)
def test_malformed_requests_do_not_disturb_a_good_client(servers, unix_address, raw_streams):
  limit = 1024 * 1024
  server = servers([unix_address], max_message_length=limit)
  server.bind(pair)
  server.bind(direct)
  server.start()
  stop = threading.Event()
  good_calls = [0, 0]
  failures = []

  def good(index):
    try:
      with grpc.Client(unix_address, timeout=30) as client:
        while not stop.is_set():
          x = np.array([index, 10 * index], np.int32)
          out_x, out_y = client.pair(x, np.full([2, 3], index, np.float32))
          np.testing.assert_array_equal(out_x, x + 1)
          np.testing.assert_allclose(out_y, [3 * index] * 2)
          good_calls[index] += 1
    except Exception as e:  # pylint: disable=broad-except
      if not stop.is_set():  # Past the stop, the server's shutdown ends a call left waiting.
        failures.append(e)

  threads = [threading.Thread(target=good, args=(i,)) for i in (0, 1)]
  for t in threads:
    t.start()
  try:
    bad = raw_streams(unix_address)
    for name, data, code, message in _malformed(limit):
      before = list(good_calls)
      if code == errors.RESOURCE_EXHAUSTED:
        with pytest.raises(grpcio.RpcError) as info:
          bad.send(data)
        assert info.value.code() == grpcio.StatusCode.RESOURCE_EXHAUSTED, name
        bad = raw_streams(unix_address)
      else:
        response = bad.send(data)
        assert response.status_code == code, (name, response)
        assert message in response.status_error_message, (name, response)
      deadline = time.time() + 30
      while (not all(n > b for n, b in zip(good_calls, before)) and not failures and
             time.time() < deadline):
        time.sleep(0.01)
      assert not failures, failures
      assert all(n > b for n, b in zip(good_calls, before)), name
    # The bad stream still works for good requests.
    response = bad.send(_request('direct', np.array([1, 2], np.int32), 'hi'))
    assert response.status_code == 0
    assert [codec.decode_tensor(t)[()] for t in response.tensor] == [3, b'hi!']
  finally:
    stop.set()
    # A client may be waiting in a call for its partner's rows, which will not come now.
    server.shutdown()
    for t in threads:
      t.join(30)
  assert not any(t.is_alive() for t in threads)
  assert not failures, failures


# --- fuzzing ---------------------------------------------------------------------------------

_DTYPES = [service_pb2.DT_INT32, service_pb2.DT_FLOAT, service_pb2.DT_STRING,
           service_pb2.DT_UINT8, service_pb2.DT_INT64, 0, 14, 99, -3]


@st.composite
def _tensors(draw):
  dtype = draw(st.sampled_from(_DTYPES))
  shape = draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3, 2**40]), max_size=3))
  tensor = service_pb2.Tensor(dtype=dtype, shape=shape)
  if draw(st.booleans()):
    size = 1
    for d in shape:
      size *= max(d, 0)
    itemsize = {service_pb2.DT_INT32: 4, service_pb2.DT_FLOAT: 4, service_pb2.DT_INT64: 8}.get(
        dtype, 1)
    tensor.content = b'\1' * min(size * itemsize, 64)
  else:
    tensor.content = draw(st.binary(max_size=24))
  tensor.string_val.extend(draw(st.lists(st.binary(max_size=4), max_size=3)))
  return tensor


@st.composite
def _payloads(draw):
  if draw(st.integers(0, 9)) == 0:
    return draw(st.binary(max_size=64))
  request = service_pb2.CallRequest(
      function=draw(st.sampled_from(['single', 'direct', 'nope', ''])),
      tensor=draw(st.lists(_tensors(), max_size=3)))
  return request.SerializeToString()


@pytest.fixture(scope='module')
def fuzz_server():
  import tempfile  # pylint: disable=g-import-not-at-top
  import shutil  # pylint: disable=g-import-not-at-top
  path = tempfile.mkdtemp(prefix='sgfuzz', dir='/tmp')
  address = f'unix:{path}/fuzz.sock'
  # Only functions whose valid calls never wait for other callers (batch size 1 / direct), so a
  # valid random request cannot block the fuzz stream.
  server = grpc.Server([address])
  server.bind(single)
  server.bind(direct)
  server.start()
  stream = RawStream(address)
  yield address, stream
  stream.close()
  server.shutdown()
  shutil.rmtree(path, ignore_errors=True)


@pytest.mark.timeout(120)
@hypothesis.settings(max_examples=150, deadline=2000,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(payload=_payloads())
def test_fuzzed_requests_get_an_answer(fuzz_server, payload):
  _, stream = fuzz_server
  response = stream.send(payload)
  assert response.status_code in (0, errors.INVALID_ARGUMENT, errors.INTERNAL), response
  if response.status_code:
    assert response.status_error_message


@pytest.mark.timeout(60)
def test_server_serves_after_fuzzing(fuzz_server):
  address, _ = fuzz_server
  with grpc.Client(address, timeout=30) as client:
    assert client.single(np.array([21], np.int32)).tolist() == [42]
    assert client.single(4) == 8
    assert client.direct(np.array([1, 2], np.int32), 'a') == (3, b'a!')


# --- many streams ----------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_many_concurrent_streams(servers, unix_address):
  """256 actors, each holding its stream, all in one batch; the server holds one thread each."""
  n = 256

  @tf.function(input_signature=[tf.TensorSpec([n], tf.int32)])
  def many(x):
    return x * 3

  server = servers([unix_address])
  server.bind(many)
  server.start()

  async def actor(channel, i):
    call = channel.stream_stream(CALL, request_serializer=None,
                                 response_deserializer=service_pb2.CallResponse.FromString)()
    await call.write(_request('many', np.int32(i)))
    response = await call.read()
    await call.done_writing()
    return response

  async def main():
    async with grpcio.aio.insecure_channel(unix_address) as channel:
      await asyncio.wait_for(channel.channel_ready(), 30)
      return await asyncio.wait_for(
          asyncio.gather(*[actor(channel, i) for i in range(n)]), 60)

  responses = asyncio.run(main())
  values = [codec.decode_tensor(r.tensor[0])[()] for r in responses]
  assert values == [3 * i for i in range(n)]
  assert server._run.pool.num_threads <= n + 8  # pylint: disable=protected-access


@pytest.mark.timeout(60)
def test_streams_beyond_the_limit_are_refused(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([3], tf.int32)])
  def wait(x):
    return x

  server = servers([unix_address], max_concurrent_streams=2)
  server.bind(wait)
  server.start()
  executor = concurrent.futures.ThreadPoolExecutor(4)
  try:
    a, b = clients(unix_address), clients(unix_address)
    fa = executor.submit(a.wait, 1)  # Both streams stay open, waiting for a third row.
    fb = executor.submit(b.wait, 2)
    time.sleep(0.5)
    with pytest.raises(tf.errors.ResourceExhaustedError):
      grpc.Client(unix_address, timeout=10)
  finally:
    server.shutdown()
    for f in (fa, fb):
      with pytest.raises(tf.errors.UnavailableError):
        f.result(30)
    executor.shutdown()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('path', ['call', 'call_known'])
def test_a_bug_in_serving_answers_internal_and_keeps_the_stream(path, servers, unix_address,
                                                               raw_streams, monkeypatch):
  from seed_rl.grpc import batching  # pylint: disable=g-import-not-at-top
  server = servers([unix_address])
  server.bind(single)
  server.start()
  stream = raw_streams(unix_address)
  if path == 'call_known':  # Requests like this one are read without parsing from here on.
    assert not stream.send(_request('single', np.array([3], np.int32))).status_code
  original = getattr(batching.MethodBatcher, path)
  monkeypatch.setattr(batching.MethodBatcher, path, lambda *args: 1 / 0)
  response = stream.send(_request('single', np.array([4], np.int32)))
  assert response.status_code == errors.INTERNAL
  assert response.status_error_message == (
      'ZeroDivisionError while serving single: division by zero')
  monkeypatch.setattr(batching.MethodBatcher, path, original)
  response = stream.send(_request('single', np.array([5], np.int32)))
  assert not response.status_code
  assert codec.decode_tensor(response.tensor[0]).tolist() == [10]
