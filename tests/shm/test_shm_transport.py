"""What only the shared-memory transport has: its addresses, its users, one server
serving gRPC and shared memory at once, the token, a second server of a live name, the request
area's limit. Real TensorFlow server, real sockets and segments."""

import concurrent.futures
import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.shm import address as address_lib
from seed_rl.shm import frames
from tests import processes

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


def test_the_name_is_abstract_and_the_users_own():
  assert address_lib.socket_address('shm:x') == f'\0seed_rl_shm_{os.getuid()}_x'


def _as_user_nobody(action) -> bytes:
  """What `action()` returns (bytes) when run in a child process of user nobody (forked: the
  child runs no thread but the forking one, and only socket calls)."""
  read_end, write_end = os.pipe()
  pid = os.fork()
  if pid == 0:  # The child.
    code = 0
    try:
      os.close(read_end)
      os.setgid(_NOBODY)
      os.setuid(_NOBODY)
      os.write(write_end, action())
    except BaseException:  # pylint: disable=broad-except
      code = 1
    os._exit(code)  # pylint: disable=protected-access
  os.close(write_end)
  try:
    with os.fdopen(read_end, 'rb') as result:
      output = result.read()
  finally:
    _, status = os.waitpid(pid, 0)
  assert os.waitstatus_to_exitcode(status) == 0
  return output


_NOBODY = 65534
_needs_root = pytest.mark.skipif(os.getuid() != 0,
                                 reason='running a process as another user needs root')


def _hello_and_first_bytes(name: str) -> bytes:
  """Connects to the abstract socket `name`, presents itself without a token and returns the
  first byte the server answers, or b'closed' when it closes the connection."""
  with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
    sock.settimeout(20)
    sock.connect(name)
    try:
      frames.send_hello(sock, None)
      return sock.recv(1) or b'closed'
    except ConnectionError:  # Closed before the hello was sent or read.
      return b'closed'


@_needs_root
def test_a_client_of_another_user_is_not_served(servers, address):
  _started(servers, [address])
  name = address_lib.socket_address(address)
  assert _hello_and_first_bytes(name) != b'closed'  # This user is welcome ...
  assert _as_user_nobody(lambda: _hello_and_first_bytes(name)) == b'closed'  # ... nobody not.


@_needs_root
def test_a_server_of_another_user_is_not_talked_to(address):
  name = address_lib.socket_address(address)

  def listen_as_nobody() -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
      sock.bind(name)  # This user's name, taken by another user's process.
      sock.listen()
      conn, _ = sock.accept()
      conn.close()
    return b'accepted'

  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    squatter = pool.submit(_as_user_nobody, listen_as_nobody)
    with pytest.raises(tf.errors.UnavailableError,
                       match=rf'Server at {address} is not reachable: the process listening '
                             rf'there \(pid \d+\) runs as user {_NOBODY}, not as this user '
                             rf'\({os.getuid()}\)'):
      grpc.Client(address, timeout=20)
    assert squatter.result(30) == b'accepted'


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


def test_a_server_shut_down_frees_its_name_before_shutdown_returns(servers, address):
  """The accepting thread's pending accept holds the listening socket, and so the name, until the
  thread returns: shutdown waits for it, so that a server started right after (a restarted
  learner's) finds the name free however late that thread runs."""
  for _ in range(5):
    server = _started(servers, [address])
    assert processes.shm_sockets(address) == 1
    server.shutdown()
    assert not [thread for thread in threading.enumerate()
                if thread.name == f'seed_rl_shm_accept_{address[len("shm:"):]}']
    assert processes.shm_sockets(address) == 0


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
