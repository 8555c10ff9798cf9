"""What a learner logs about strangers: failed TLS handshakes (not one line each) and, at start,
that it listens beyond loopback without a token. Real gRPC and TLS."""

import logging
import os
import socket
import subprocess
import sys

import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import security
from tests.grpc.test_grpc_security import certs  # noqa: F401  pylint: disable=unused-import

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_JUNK_CONNECTIONS = 300

_TLS_LEARNER = r'''
import logging, sys
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format='%(name)s: %(message)s')
import tensorflow as tf
from seed_rl import grpc

@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def foo(x):
  return x + 1

server = grpc.Server(['localhost:0'], tls_certificate_chain=open(sys.argv[1], 'rb').read(),
                     tls_private_key=open(sys.argv[2], 'rb').read())
server.bind(foo)
server.start()
print(server.ports[0], flush=True)
print('JUNK START', file=sys.stderr, flush=True)
sys.stdin.readline()
print('JUNK END', file=sys.stderr, flush=True)
server.shutdown()
'''


@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def foo(x):
  return x + 1


@pytest.mark.timeout(120)
def test_junk_connections_to_a_tls_learner_are_not_logged_one_by_one(tmp_path, certs):  # pylint: disable=redefined-outer-name
  cert, _, cert_file, key_file = certs['server']
  script = tmp_path / 'tls_learner.py'
  script.write_text(_TLS_LEARNER)
  env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
  env.pop('GRPC_VERBOSITY', None)
  learner = subprocess.Popen([sys.executable, str(script), str(cert_file), str(key_file)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
  try:
    port = int(learner.stdout.readline())
    for _ in range(_JUNK_CONNECTIONS):
      with socket.create_connection(('localhost', port), timeout=10) as junk:
        junk.sendall(b'GET / HTTP/1.1\r\nHost: learner\r\n\r\n')
    with grpc.Client(f'localhost:{port}', timeout=30, tls_root_certificates=cert) as client:
      assert client.foo(1) == 2  # Still serving, and every junk connection was handled.
    _, stderr = learner.communicate('\n', timeout=60)
  finally:
    if learner.poll() is None:
      learner.kill()
      learner.communicate()
  assert learner.returncode == 0, stderr[-3000:]
  during = stderr.split('JUNK START\n', 1)[1].split('JUNK END', 1)[0]
  assert during.splitlines() == [], during[-3000:]


def _warnings(caplog):
  return [r.getMessage() for r in caplog.records
          if r.name == 'seed_rl.grpc.server' and r.levelno == logging.WARNING]


@pytest.mark.timeout(60)
def test_a_server_beyond_loopback_without_a_token_warns_once_at_start(servers, caplog):
  caplog.set_level(logging.INFO)
  server = servers(['[::]:0'])
  server.bind(foo)
  server.start()
  port = server.ports[0]
  assert _warnings(caplog) == [
      f'seed_rl.grpc: no token: anyone who can reach port {port} can call the learner; set a '
      'token: --grpc_token_file (Server(..., token=...)); without TLS (--grpc_tls_cert_file, '
      '--grpc_tls_key_file) the traffic is not encrypted either']


@pytest.mark.timeout(60)
def test_a_tls_server_beyond_loopback_without_a_token_warns(servers, certs, caplog):  # pylint: disable=redefined-outer-name
  cert, key, _, _ = certs['server']
  caplog.set_level(logging.INFO)
  server = servers(['localhost:0', '[::]:0'], tls_certificate_chain=cert, tls_private_key=key)
  server.bind(foo)
  server.start()
  assert _warnings(caplog) == [
      f'seed_rl.grpc: no token: anyone who can reach port {server.ports[1]} can call the '
      'learner; set a token: --grpc_token_file (Server(..., token=...))']


@pytest.mark.timeout(60)
def test_no_warning_with_a_token_or_on_loopback(servers, sock_dir, caplog):
  caplog.set_level(logging.INFO)
  for addresses, kwargs in ((['[::]:0'], {'token': b'secret'}),
                            (['localhost:0', '127.0.0.1:0', f'unix:{sock_dir}/s.sock'], {})):
    server = servers(addresses, **kwargs)
    server.bind(foo)
    server.start()
    server.shutdown()
  assert _warnings(caplog) == []


@pytest.mark.parametrize('address, loopback', [
    ('unix:/tmp/x.sock', True), ('localhost:8686', True), ('LOCALHOST:1', True),
    ('127.0.0.1:8686', True), ('127.3.4.5:1', True), ('[::1]:8686', True),
    ('ipv4:127.0.0.1:8686', True),
    ('[::]:8686', False), ('0.0.0.0:8686', False), (':8686', False), ('10.0.0.2:8686', False),
    ('learner-host:8686', False), ('[2001:db8::1]:8686', False),
])
def test_is_loopback(address, loopback):
  assert security.is_loopback(address) is loopback
