"""seed_rl.grpc.Client reads responses laid out like one it parsed before without parsing them,
and still reads every other response (other shapes, errors, bytes that are no response) right.

Real gRPC over unix sockets; the garbage-answering server is a real grpcio server too.
"""

from concurrent import futures

import grpc as grpcio
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import service_pb2


@tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
def increment(x):
  tf.debugging.assert_non_negative(x)
  return {'next': x + 1, 'sum': tf.reduce_sum(x)}


def _started(servers, address):
  server = servers([address])
  server.bind(increment)
  server.start()
  return server


@pytest.mark.timeout(60)
def test_a_response_like_the_last_one_is_read_without_parsing(servers, clients, unix_address,
                                                             monkeypatch):
  _started(servers, unix_address)
  client = clients(unix_address)
  client.increment(np.array([1, 2, 3], np.int32))  # Parsed: the client learns its layout.
  monkeypatch.setattr(service_pb2.CallResponse, 'FromString', None)  # No parsing from here on.
  result = client.increment(np.array([5, 6, 7], np.int32))
  np.testing.assert_array_equal(result['next'], [6, 7, 8])
  assert result['sum'] == 18 and result['sum'].shape == ()
  assert result['next'].dtype == np.int32 and not result['next'].flags.writeable


@pytest.mark.timeout(60)
def test_other_shapes_and_errors_after_a_learnt_response_are_read_right(servers, clients,
                                                                        unix_address):
  _started(servers, unix_address)
  client = clients(unix_address)
  for values in ([1, 2, 3], [4, 5, 6], [1, 2], [], [7, 8, 9], [10] * 5):
    result = client.increment(np.array(values, np.int32))
    np.testing.assert_array_equal(result['next'], np.array(values) + 1)
    assert result['sum'] == sum(values)
  # An error of the same function, then a response like a learnt one again.
  with pytest.raises(tf.errors.InvalidArgumentError, match='assert'):
    client.increment(np.array([1, -2, 3], np.int32))
  np.testing.assert_array_equal(client.increment(np.array([0, 0, 1], np.int32))['next'],
                                [1, 1, 2])


@pytest.mark.timeout(60)
def test_bytes_that_are_no_response_raise_internal(unix_address):
  def init(request, context):
    del request, context
    return service_pb2.InitResponse(method_output_signature=[
        service_pb2.MethodOutputSignature(name='f', output_signature=service_pb2.Structure(
            tensor=service_pb2.TensorSpec()))]).SerializeToString()

  def call(request_iterator, context):
    del context
    for _ in request_iterator:
      yield b'\xff\xff'  # Not a CallResponse.

  server = grpcio.server(futures.ThreadPoolExecutor(4))
  server.add_generic_rpc_handlers([grpcio.method_handlers_generic_handler(
      'seed_rl.TensorService', {
          'Init': grpcio.unary_unary_rpc_method_handler(init),
          'Call': grpcio.stream_stream_rpc_method_handler(call)})])
  server.add_insecure_port(unix_address)
  server.start()
  try:
    with grpc.Client(unix_address, timeout=10) as client:
      with pytest.raises(tf.errors.InternalError, match='Cannot parse CallResponse'):
        client.f(np.int32(1))
  finally:
    server.stop(None)
