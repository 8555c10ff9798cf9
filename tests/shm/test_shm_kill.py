"""kill -9 of either side of a shared-memory connection: nothing is left behind.

Real processes, real TensorFlow on the server side; the segment is a memfd, so that nothing is
ever in /dev/shm and its memory goes with the last process that maps it: these tests look at
/dev/shm and at the memfd mappings of the process that survives.
"""

import concurrent.futures
import os
import signal
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.shm import address as address_lib
from tests import processes

pytestmark = pytest.mark.timeout(120)

_SERVER = '''
import sys, time
import tensorflow as tf
from seed_rl import grpc
@tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
def plus(x):
  return x + 1
server = grpc.Server([sys.argv[1]])
server.bind(plus)
server.start()
print('serving', flush=True)
time.sleep(600)
'''

_CLIENT = '''
import sys
from seed_rl import grpc
client = grpc.Client(sys.argv[1], timeout=30)
assert 'tensorflow' not in sys.modules
print('calling', flush=True)
print(client.plus(1), flush=True)
'''

# Writes part of a request into the segment and dies before it says the request's length.
_HALF_WRITER = '''
import os, signal, sys
from seed_rl.shm import connection
conn = connection.Connection(sys.argv[1], timeout=30)
conn._segment.write_request(b'\\x0a\\x04plus' + b'\\xff' * 100)
print('written', flush=True)
os.kill(os.getpid(), signal.SIGKILL)
'''


@tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
def plus(x):
  return x + 1


@pytest.fixture
def address(sock_dir):
  return f'shm:{os.path.basename(sock_dir)}'


@pytest.fixture
def procs(tmp_path):
  """The processes a test starts (`_python`), killed after it."""
  made = []
  yield (tmp_path, made)
  for process in made:
    process.kill()


def _python(procs, name, script, address):
  log_dir, made = procs
  made.append(processes.Process(name, [sys.executable, '-c', script, address], log_dir))
  return made[-1]


def _memfd_segments(pid='self'):
  """The distinct shared-memory segments of this transport that process `pid` maps."""
  with open(f'/proc/{pid}/maps') as maps:
    return {line.split()[4] for line in maps if 'memfd:seed_rl_shm' in line}


def _dev_shm():
  return set(os.listdir('/dev/shm'))


def test_a_client_killed_while_waiting_for_its_batch_leaves_nothing_behind(servers, clients,
                                                                          address, procs):
  before, earlier = _dev_shm(), _memfd_segments()  # Earlier tests' segments may still close.
  server = servers([address])
  server.bind(plus)
  server.start()
  client = _python(procs, 'client', _CLIENT, address)
  processes.wait_until(lambda: server.pending_batches(), 30.)  # Its row waits for a second one.
  assert len(_memfd_segments() - earlier) == 1  # The server maps the client's segment.
  client.popen.send_signal(signal.SIGKILL)
  client.popen.wait(30)
  # The batch still runs with the dead caller's row; the other caller gets its own answer.
  other = clients(address)
  assert other.plus(np.int32(5)) == 6
  processes.wait_until(lambda: server._run._streams == 1, 30.)  # pylint: disable=protected-access
  # The other client's segment only (both sides map it): the dead one's is unmapped just after
  # its stream ends.
  processes.wait_until(lambda: len(_memfd_segments() - earlier) == 1, 30.)
  assert other.plus(np.array([1, 2], np.int32)).tolist() == [2, 3]
  other.close()
  processes.wait_until(lambda: not _memfd_segments() - earlier, 30.)
  assert server.wait_for_clients_to_leave(10)
  assert _dev_shm() == before


def test_a_client_killed_while_writing_its_request_sends_nothing(servers, clients, address,
                                                                 procs):
  earlier = _memfd_segments()
  server = servers([address])
  server.bind(plus)
  server.start()
  writer = _python(procs, 'writer', _HALF_WRITER, address)
  writer.wait_for('written', 60)
  writer.popen.wait(30)
  processes.wait_until(lambda: not _memfd_segments() - earlier, 30.)  # Its connection ended.
  assert not server.pending_batches()  # No row of it joined a batch.
  assert server._run._streams == 0  # pylint: disable=protected-access
  assert clients(address).plus(np.array([1, 2], np.int32)).tolist() == [2, 3]


def test_a_server_killed_mid_call_leaves_nothing_behind_and_a_new_one_takes_its_name(
    clients, address, procs):
  before, earlier = _dev_shm(), _memfd_segments()
  server = _python(procs, 'server', _SERVER, address)
  server.wait_for('serving', 60)
  client = clients(address)
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    waiting = pool.submit(client.plus, np.int32(1))  # Waits for a second row.
    processes.wait_until(lambda: len(_memfd_segments(server.popen.pid)) == 1, 30.)
    time.sleep(0.2)
    assert not waiting.done()
    server.popen.send_signal(signal.SIGKILL)
    server.popen.wait(30)
    with pytest.raises(tf.errors.UnavailableError):
      waiting.result(10)
  assert not _memfd_segments() - earlier  # The client let go of the segment.
  assert _dev_shm() == before
  # Its name went with it (abstract: no file), a new server of the same name takes it, and the
  # client reconnects on its next call.
  assert processes.shm_sockets(address) == 0
  assert not address_lib.is_served(address)
  restarted = _python(procs, 'restarted', _SERVER, address)
  restarted.wait_for('serving', 60)
  assert client.plus(np.array([3, 4], np.int32)).tolist() == [4, 5]
