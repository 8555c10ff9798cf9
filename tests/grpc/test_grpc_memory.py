"""The learner's memory is bounded by its message limit: gRPC refuses oversized requests from
their length prefix, and buffers little of a stream that is not being read.

Real gRPC. The probes run bench/grpc_memory_probe.py: a server process, a good client process,
and senders whose effect is read from the server's /proc/PID/status.
"""

import json
import logging
import os
import queue
import subprocess
import sys

import grpc as grpcio
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.grpc import message_bounds
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PROBE = os.path.join(_ROOT, 'bench', 'grpc_memory_probe.py')
_CALL = '/seed_rl.TensorService/Call'
_MIB = 1 << 20
# Server memory a probe may add beyond the stated bound: threads, connections, allocator slack
# (measured under 20 MiB).
_FIXED_MIB = 40
ROWS, ROW_BYTES = 4, 10_000


@tf.function(input_signature=[tf.TensorSpec([ROWS, ROW_BYTES], tf.uint8),
                              tf.TensorSpec([ROWS], tf.int64)])
def rows(x, ids):
  return tf.reduce_sum(tf.cast(x, tf.int32), axis=1), ids


@tf.function(input_signature=[tf.TensorSpec([], tf.string)])
def echo(s):
  return s


def _raw_call(address, data: bytes):
  """Sends one request on its own stream; returns the CallResponse, or the RpcError."""
  channel = grpcio.insecure_channel(address, options=[
      ('grpc.max_send_message_length', 256 * _MIB)])
  try:
    requests = queue.SimpleQueue()
    requests.put(data)
    responses = channel.stream_stream(_CALL, request_serializer=None,
                                      response_deserializer=service_pb2.CallResponse.FromString)(
                                          iter(requests.get, None), timeout=30,
                                          wait_for_ready=True)
    try:
      return next(responses)
    except grpcio.RpcError as e:
      return e
    finally:
      requests.put(None)
  finally:
    channel.close()


def _rows_request(num_rows: int) -> bytes:
  return wire.encode_call_request('rows', [np.ones([num_rows, ROW_BYTES], np.uint8),
                                           np.arange(num_rows, dtype=np.int64)])


@pytest.mark.timeout(30)
def test_request_bytes_is_the_encoded_size_of_a_full_batch():
  from seed_rl.grpc import binding  # pylint: disable=g-import-not-at-top
  bound = binding.bind_function(rows, binding.cpu_device_name())
  assert message_bounds.request_bytes('rows', bound.args) == len(_rows_request(ROWS))
  response = wire.encode_call_response(
      [np.zeros([ROWS], np.int32), np.zeros([ROWS], np.int64)], bound.output_codes)
  assert message_bounds.response_bytes(bound.output_codes, bound.output_shapes,
                                       bound.batch_size) == len(response)
  echo_bound = binding.bind_function(echo, binding.cpu_device_name())
  assert message_bounds.request_bytes('echo', echo_bound.args) is None
  assert message_bounds.max_message_bytes([10, None], fallback=7) == 7
  assert message_bounds.max_message_bytes([10, 30], fallback=7) == 30 + message_bounds.MARGIN


@pytest.mark.timeout(120)
def test_the_receive_limit_is_the_largest_request_of_the_bound_functions(
    servers, clients, unix_address, sock_dir):
  server = servers([unix_address])
  server.bind(rows)
  server.start()
  limit = len(_rows_request(ROWS)) + message_bounds.MARGIN
  oversized = _rows_request(ROWS * 3)  # Beyond the limit: refused by gRPC, stream ended.
  assert len(oversized) > limit
  refused = _raw_call(unix_address, oversized)
  assert isinstance(refused, grpcio.RpcError), refused
  assert refused.code() == grpcio.StatusCode.RESOURCE_EXHAUSTED
  assert f'vs. {limit})' in refused.details()
  # Within the limit, a wrong request reaches the server's own checks.
  answered = _raw_call(unix_address, _rows_request(ROWS + 1))
  assert answered.status_code == tf.errors.INVALID_ARGUMENT, answered
  # Full-batch direct calls and blocks of rows are served.
  client = clients(unix_address)
  np.testing.assert_array_equal(client.rows(np.ones([ROWS, ROW_BYTES], np.uint8),
                                            np.arange(ROWS))[0], [ROW_BYTES] * ROWS)
  # An explicit max_message_length wins: the oversized request reaches the server.
  explicit = servers([f'unix:{sock_dir}/explicit.sock'], max_message_length=64 * _MIB)
  explicit.bind(rows)
  explicit.start()
  answered = _raw_call(f'unix:{sock_dir}/explicit.sock', oversized)
  assert answered.status_code == tf.errors.INVALID_ARGUMENT, answered
  # Strings have no size bound: the fixed cap applies.
  strings = servers([f'unix:{sock_dir}/strings.sock'])
  strings.bind(echo)
  strings.start()
  text = b'x' * len(oversized)
  assert clients(f'unix:{sock_dir}/strings.sock').echo(text) == text


@pytest.mark.timeout(60)
def test_a_function_bound_after_start_with_larger_messages_gets_a_warning(
    servers, unix_address, caplog):
  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def small(x):
    return x + 1

  server = servers([unix_address])
  server.bind(small)
  server.start()
  with caplog.at_level(logging.WARNING, logger='seed_rl.grpc.server'):
    server.bind(echo)  # Strings: no size bound, unlike small's messages.
  assert [r.getMessage() for r in caplog.records] == [
      'seed_rl.grpc: echo was bound while the server runs, with message limits sized when it '
      'started: its larger requests or responses are refused until the server restarts '
      '(shutdown, then start). Bind before start, or pass max_message_length.']


def _probe(*args):
  """The figures of bench/grpc_memory_probe.py for the server's defaults."""
  result = subprocess.run([sys.executable, _PROBE, '--no_baseline', '--json', *args],
                          capture_output=True, text=True, timeout=150, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = [line for line in result.stdout.splitlines() if line.startswith('{')]
  assert len(lines) == 1, result.stdout
  return json.loads(lines[0])


def _bound_mib(streams: int, receive_limit: int) -> float:
  """The server's stated bound for `streams` streams, plus its fixed overhead, in MiB."""
  return streams * (2 * receive_limit + 64 * 1024) / _MIB + _FIXED_MIB


def _check_good_client(figures):
  assert figures['good_failures_during'] == [], figures
  assert figures['good_calls_during'] > 0 and figures['good_longest_wait_s'] < 5, figures
  assert figures['good_calls_after'] == 10, figures


@pytest.mark.timeout(180)
def test_oversized_requests_of_16_streams_do_not_raise_the_servers_memory():
  figures = _probe('--streams', '16', '--requests', '3', '--mib', '128')
  outcomes = figures['sender_outcomes']
  assert len(outcomes) == 1 and sum(outcomes.values()) == 16, figures
  outcome, = outcomes
  assert outcome.startswith('RESOURCE_EXHAUSTED: '), figures
  assert f'Received message larger than max ({figures["request_bytes"]} vs. ' in outcome
  receive_limit = int(outcome.rsplit('vs. ', 1)[1].rstrip(')'))
  assert receive_limit < _MIB
  assert figures['peak_rise_mib'] < _bound_mib(16, receive_limit), figures
  _check_good_client(figures)


@pytest.mark.timeout(180)
def test_streams_that_are_not_being_read_buffer_little():
  figures = _probe('--held', '--streams', '32', '--requests', '1', '--mib', '8')
  # Every stream holds one row waiting in a batch and one pushed request: no limit applies
  # before the server reads it, only gRPC's flow-control window.
  assert figures['peak_rise_mib'] < _bound_mib(32, 0), figures
  _check_good_client(figures)
