"""What only the shared-memory transport has: its addresses, its socket directory, one server
serving gRPC and shared memory at once, the token, a second server of a live name, the request
area's limit. Real TensorFlow server, real sockets and segments."""

import concurrent.futures
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.shm import address as address_lib

pytestmark = pytest.mark.timeout(60)


@tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
def plus(x):
  return x + 1


@tf.function(input_signature=[tf.TensorSpec([None], tf.uint8)])
def total(x):
  return tf.reduce_sum(tf.cast(x, tf.int32))


@pytest.fixture
def address(sock_dir):
  return f'shm:{os.path.basename(sock_dir)}'


def _started(servers, addresses, fn=plus, **kwargs):
  server = servers(addresses, **kwargs)
  server.bind(fn)
  server.start()
  return server


@pytest.mark.parametrize('name', ['', 'a/b', '..', 'x' * 65, 'sp ace'])
def test_a_name_that_is_not_a_plain_file_name_is_refused(servers, name):
  with pytest.raises(tf.errors.InvalidArgumentError, match='is not a shared-memory address'):
    grpc.Client(f'shm:{name}', timeout=1)
  with pytest.raises(tf.errors.UnavailableError,
                     match=r"Could not listen on address 'shm:.*is not a shared-memory address"):
    _started(servers, [f'shm:{name}'])


def test_a_socket_directory_others_can_write_to_is_refused(tmp_path, monkeypatch):
  monkeypatch.setattr(address_lib.tempfile, 'gettempdir', lambda: str(tmp_path))
  path = tmp_path / f'seed_rl_shm_{os.getuid()}'
  assert address_lib.socket_path('shm:x') == str(path / 'x.sock')
  assert path.stat().st_mode & 0o777 == 0o700
  path.chmod(0o777)
  with pytest.raises(address_lib.AddressError, match='others cannot write to'):
    address_lib.socket_path('shm:x')


def test_one_server_batches_callers_of_both_transports(servers, clients, address, sock_dir):
  unix = f'unix:{sock_dir}/server.sock'
  _started(servers, [unix, address])
  over_grpc, over_shm = clients(unix), clients(address)
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    waiting = pool.submit(over_grpc.plus, np.int32(10))  # Waits for a second row ...
    assert over_shm.plus(np.int32(20)) == 21  # ... which comes through shared memory.
    assert waiting.result(10) == 11


def test_the_token_is_checked_before_anything_is_served(servers, clients, address):
  _started(servers, [address], token=b'secret')
  with pytest.raises(tf.errors.UnauthenticatedError, match='Missing or wrong seed_rl token'):
    grpc.Client(address, timeout=10)
  with pytest.raises(tf.errors.UnauthenticatedError):
    grpc.Client(address, timeout=10, token=b'wrong')
  assert clients(address, token=b'secret').plus(np.array([1, 2], np.int32)).tolist() == [2, 3]


def test_a_name_a_live_server_serves_is_not_taken(servers, address):
  _started(servers, [address])
  with pytest.raises(tf.errors.UnavailableError, match='another server already serves'):
    _started(servers, [address])


def test_a_request_beyond_the_message_limit_is_refused_and_the_client_goes_on(servers, clients,
                                                                              address):
  _started(servers, [address], fn=total, max_message_length=10_000)
  client = clients(address)
  with pytest.raises(tf.errors.ResourceExhaustedError, match=r'larger than max \(200\d\d vs\. '
                                                             r'10000\)'):
    client.total(np.ones([20_000], np.uint8))
  assert client.total(np.ones([5_000], np.uint8)) == 5_000


def test_a_client_waits_for_the_server_and_times_out_clearly(address):
  with pytest.raises(tf.errors.UnavailableError,
                     match=r'Server at shm:.* is not reachable: no answer within 0.3 s'):
    grpc.Client(address, timeout=0.3)


def test_the_transport_needs_only_the_standard_library():
  code = ('import sys; import seed_rl.shm.connection, seed_rl.shm.listener; '
          'print(sorted(m for m in ("grpc", "tensorflow", "numpy", "google.protobuf") '
          'if m in sys.modules))')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60, check=True)
  assert result.stdout.strip() == '[]'
