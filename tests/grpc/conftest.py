"""Fixtures of the seed_rl.grpc tests: addresses, and servers/clients that are always cleaned up."""

import os
import shutil
import socket
import tempfile

import pytest

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')


@pytest.fixture
def sock_dir():
  """A short directory for unix sockets (socket paths are limited to ~107 bytes)."""
  path = tempfile.mkdtemp(prefix='sgrpc', dir='/tmp')
  yield path
  shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def unix_address(sock_dir):
  return f'unix:{sock_dir}/server.sock'


@pytest.fixture
def free_port() -> int:
  """A TCP port that was free a moment ago."""
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


@pytest.fixture
def servers():
  """Factory of `seed_rl.grpc.Server`s that are shut down after the test."""
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  made = []

  def make(addresses, **kwargs):
    server = grpc.Server(addresses, **kwargs)
    made.append(server)
    return server

  yield make
  for server in made:
    server.shutdown()


@pytest.fixture
def clients():
  """Factory of `seed_rl.grpc.Client`s that are closed after the test."""
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  made = []

  def make(address, **kwargs):
    kwargs.setdefault('timeout', 30)
    client = grpc.Client(address, **kwargs)
    made.append(client)
    return client

  yield make
  for client in made:
    client.close()


@pytest.fixture(params=['unix', 'shm'])
def transport_address(request, sock_dir):
  """The address of a server of each transport: gRPC over a unix socket, and shared memory
  (`shm:NAME`, a name unique to the test)."""
  if request.param == 'unix':
    return f'unix:{sock_dir}/server.sock'
  return f'shm:{os.path.basename(sock_dir)}'
