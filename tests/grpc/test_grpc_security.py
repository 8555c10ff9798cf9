"""TLS and shared-token access control of seed_rl.grpc, and the flags that configure them."""

import dataclasses
import logging
import os
import queue
import re
import subprocess
import sys

import grpc as grpcio
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import security
from seed_rl.grpc import service_pb2

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _self_signed_with_cryptography(directory, name):
  """A self-signed certificate for localhost/127.0.0.1, made with the `cryptography` package."""
  import datetime  # pylint: disable=g-import-not-at-top
  import ipaddress  # pylint: disable=g-import-not-at-top
  from cryptography import x509  # pylint: disable=g-import-not-at-top
  from cryptography.hazmat.primitives import hashes, serialization  # pylint: disable=g-import-not-at-top
  from cryptography.hazmat.primitives.asymmetric import ec  # pylint: disable=g-import-not-at-top
  from cryptography.x509.oid import NameOID  # pylint: disable=g-import-not-at-top
  key = ec.generate_private_key(ec.SECP256R1())
  subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'localhost')])
  now = datetime.datetime.now(datetime.timezone.utc)
  cert = (x509.CertificateBuilder()
          .subject_name(subject).issuer_name(subject).public_key(key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.SubjectAlternativeName([
              x509.DNSName('localhost'), x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]),
                         critical=False)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(key, hashes.SHA256()))
  key_file, cert_file = directory / f'{name}.key', directory / f'{name}.pem'
  cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
  key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
  return cert_file, key_file


def _self_signed_with_openssl(directory, name):
  """The same with the openssl command line tool (EC key: fast)."""
  key_file, cert_file = directory / f'{name}.key', directory / f'{name}.pem'
  subprocess.run(
      ['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
       '-nodes', '-keyout', str(key_file), '-out', str(cert_file), '-days', '2',
       '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
      check=True, capture_output=True, timeout=60)
  return cert_file, key_file


def _self_signed(directory, name):
  """(cert PEM, key PEM, cert path, key path): `cryptography` if installed, else openssl."""
  try:
    import cryptography  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401
  except ImportError:
    cert_file, key_file = _self_signed_with_openssl(directory, name)
  else:
    cert_file, key_file = _self_signed_with_cryptography(directory, name)
  return cert_file.read_bytes(), key_file.read_bytes(), cert_file, key_file


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
  try:
    directory = tmp_path_factory.mktemp('certs')
    return {name: _self_signed(directory, name) for name in ('server', 'other')}
  except (OSError, subprocess.SubprocessError) as e:
    pytest.skip(f'openssl is not available: {e}')


def _make_counter_fn():
  calls = tf.Variable(0)

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def foo(x):
    calls.assign_add(1)
    return x + 1

  return foo, calls


@pytest.mark.timeout(60)
def test_tls(servers, clients, certs, free_port):
  cert, key, _, _ = certs['server']
  port = free_port
  foo, _ = _make_counter_fn()
  server = servers([f'localhost:{port}'], tls_certificate_chain=cert, tls_private_key=key)
  server.bind(foo)
  server.start()
  assert clients(f'localhost:{port}', tls_root_certificates=cert).foo(1) == 2
  # Connecting by IP, the certificate names it too.
  assert clients(f'127.0.0.1:{port}', tls_root_certificates=cert).foo(2) == 3
  # A plain-text client cannot talk to a TLS server.
  with pytest.raises(tf.errors.UnavailableError):
    grpc.Client(f'localhost:{port}', timeout=1)
  # Nor can a client that trusts another CA.
  with pytest.raises(tf.errors.UnavailableError):
    grpc.Client(f'localhost:{port}', timeout=1, tls_root_certificates=certs['other'][0])


@pytest.mark.timeout(60)
def test_token(servers, clients, unix_address):
  foo, calls = _make_counter_fn()
  server = servers([unix_address], token=b'secret')
  server.bind(foo)
  server.start()
  with pytest.raises(tf.errors.UnauthenticatedError, match='token'):
    grpc.Client(unix_address, timeout=10)
  with pytest.raises(tf.errors.UnauthenticatedError):
    grpc.Client(unix_address, timeout=10, token=b'wrong')
  # A raw Call stream without the token is refused before any bound function runs.
  channel = grpcio.insecure_channel(unix_address)
  try:
    requests = queue.SimpleQueue()
    stream = channel.stream_stream('/seed_rl.TensorService/Call', request_serializer=None)(
        iter(requests.get, None), wait_for_ready=True)
    request = service_pb2.CallRequest(function='foo')
    request.tensor.add(dtype=service_pb2.DT_INT32, content=np.int32(1).tobytes())
    requests.put(request.SerializeToString())
    with pytest.raises(grpcio.RpcError) as info:
      next(stream)
    assert info.value.code() == grpcio.StatusCode.UNAUTHENTICATED
    requests.put(None)
  finally:
    channel.close()
  assert calls.numpy() == 0
  client = clients(unix_address, token=b'secret')
  assert client.foo(1) == 2
  assert calls.numpy() == 1


@pytest.mark.timeout(60)
def test_tls_and_token(servers, clients, certs, free_port):
  cert, key, _, _ = certs['server']
  port = free_port
  foo, _ = _make_counter_fn()
  server = servers([f'[::]:{port}'], tls_certificate_chain=cert, tls_private_key=key,
                   token=b'tok')
  server.bind(foo)
  server.start()
  with pytest.raises(tf.errors.UnauthenticatedError):
    grpc.Client(f'localhost:{port}', timeout=10, tls_root_certificates=cert)
  client = clients(f'localhost:{port}', tls_root_certificates=cert, token=b'tok')
  assert client.foo(41) == 42


@pytest.mark.timeout(30)
def test_invalid_security_arguments():
  with pytest.raises(ValueError, match='both a certificate chain and a private key'):
    grpc.Server(['localhost:0'], tls_certificate_chain=b'x')
  with pytest.raises(ValueError, match='empty'):
    grpc.Server(['localhost:0'], token=b'')
  with pytest.raises(TypeError):
    grpc.Server(['localhost:0'], token=123)


@pytest.mark.timeout(30)
def test_kwargs_of_the_security_files(tmp_path, certs):
  _, _, cert_file, key_file = certs['server']
  token_file = tmp_path / 'token'
  token_file.write_bytes(b'  s3cret\n')
  files = security.SecurityFiles(token_file=str(token_file), tls_cert_file=str(cert_file),
                                 tls_key_file=str(key_file), tls_ca_file=str(cert_file))
  server_kwargs = files.server_kwargs()
  assert server_kwargs == {'token': b's3cret', 'tls_certificate_chain': cert_file.read_bytes(),
                           'tls_private_key': key_file.read_bytes()}
  client_kwargs = files.client_kwargs()
  assert client_kwargs == {'token': b's3cret', 'tls_root_certificates': cert_file.read_bytes()}
  assert security.SecurityFiles().server_kwargs() == {}
  assert security.SecurityFiles().client_kwargs() == {}
  with pytest.raises(dataclasses.FrozenInstanceError):
    files.token_file = None  # pytype: disable=attribute-error


@pytest.mark.timeout(30)
def test_kwargs_of_the_security_files_errors(tmp_path, certs):
  _, _, cert_file, _ = certs['server']
  missing = str(tmp_path / 'missing.pem')
  with pytest.raises(ValueError, match=r"Cannot read the gRPC token file '.*missing.pem'"):
    security.SecurityFiles(token_file=missing).client_kwargs()
  with pytest.raises(ValueError, match='TLS root CA file'):
    security.SecurityFiles(tls_ca_file=missing).client_kwargs()
  with pytest.raises(ValueError, match='TLS private key file'):
    security.SecurityFiles(tls_cert_file=str(cert_file), tls_key_file=missing).server_kwargs()
  with pytest.raises(ValueError, match='must be given together'):
    security.SecurityFiles(tls_cert_file=str(cert_file)).server_kwargs()
  empty = tmp_path / 'empty'
  empty.write_bytes(b'\n')
  with pytest.raises(ValueError, match='is empty'):
    security.SecurityFiles(token_file=str(empty)).server_kwargs()


@pytest.mark.timeout(30)
def test_flags_are_defined():
  from absl import flags  # pylint: disable=g-import-not-at-top
  from seed_rl.common import common_flags  # noqa: F401  pylint: disable=unused-import
  for name in ('grpc_token_file', 'grpc_tls_cert_file', 'grpc_tls_key_file', 'grpc_tls_ca_file'):
    assert flags.FLAGS[name].default is None
  assert flags.FLAGS['server_address'].default == 'localhost:8686'


# --- refusals before decoding, and their logging ------------------------------------------------

_REFUSED_LINE = re.compile(r'refused (\d+) calls? from (\S+) without the right token in the last '
                           r'minute$')


def _grpc_log_records(caplog):
  """Records of the seed_rl.grpc loggers and of grpcio's own (which logs decoding tracebacks)."""
  return [r for r in caplog.records if r.name.startswith(('seed_rl.grpc', 'grpc'))]


@pytest.mark.timeout(120)
def test_unauthenticated_garbage_is_refused_before_decoding_and_not_logged(
    servers, clients, unix_address, caplog, monkeypatch):
  from seed_rl.grpc import server as server_lib  # pylint: disable=g-import-not-at-top
  decoded = []
  for name in ('_parse_call_request', '_parse_init_request'):
    original = getattr(server_lib, name)
    monkeypatch.setattr(server_lib, name,
                        lambda data, original=original, name=name: (decoded.append(name),
                                                                    original(data))[1])
  caplog.set_level(logging.DEBUG)
  foo, calls = _make_counter_fn()
  server = servers([unix_address], token=b'secret')
  server.bind(foo)
  server.start()
  garbage = b'\xff\xfe\x00 not a protobuf message'
  channel = grpcio.insecure_channel(unix_address)
  rounds = 25
  try:
    init = channel.unary_unary('/seed_rl.TensorService/Init')
    call = channel.stream_stream('/seed_rl.TensorService/Call')
    for _ in range(rounds):
      with pytest.raises(grpcio.RpcError) as info:
        init(garbage, timeout=30, wait_for_ready=True)
      assert info.value.code() == grpcio.StatusCode.UNAUTHENTICATED
      stream = call(iter([garbage]), timeout=30, wait_for_ready=True)
      with pytest.raises(grpcio.RpcError) as info:
        next(stream)
      assert info.value.code() == grpcio.StatusCode.UNAUTHENTICATED
    assert decoded == []
    # With the token, garbage is decoded and refused as such, still without a traceback.
    metadata = security.token_metadata(b'secret')
    with pytest.raises(grpcio.RpcError) as info:
      init(garbage, timeout=30, metadata=metadata)
    assert info.value.code() == grpcio.StatusCode.INVALID_ARGUMENT
    assert 'Cannot parse InitRequest' in info.value.details()
    response = service_pb2.CallResponse.FromString(
        next(call(iter([garbage]), timeout=30, metadata=metadata)))
    assert response.status_code == grpc.errors.INVALID_ARGUMENT
    assert decoded == ['_parse_init_request', '_parse_call_request']
  finally:
    channel.close()
  assert calls.numpy() == 0
  assert clients(unix_address, token=b'secret').foo(1) == 2
  records = _grpc_log_records(caplog)
  assert not [r for r in records if r.exc_info or 'Traceback' in r.getMessage()], records
  assert 'Traceback' not in caplog.text
  # 2 x 25 refused calls, one line about them so far ...
  lines = [_REFUSED_LINE.search(r.getMessage()) for r in records]
  lines = [m for m in lines if m]
  assert [(m.group(1), m.group(2)) for m in lines] == [('1', 'unix:')], caplog.text
  # ... and the rest is reported when the server shuts down.
  server.shutdown()
  lines = [m for m in (_REFUSED_LINE.search(r.getMessage()) for r in _grpc_log_records(caplog))
           if m]
  assert [int(m.group(1)) for m in lines] == [1, 2 * rounds - 1]


class FakeClock:

  def __init__(self):
    self.now = 1000.0

  def __call__(self):
    return self.now


@pytest.mark.timeout(30)
def test_refusal_log_writes_one_line_per_host_and_minute(caplog):
  caplog.set_level(logging.INFO)
  clock = FakeClock()
  log = security.RefusalLog(logging.getLogger('seed_rl.grpc.test'), 'without the right token',
                            clock=clock, max_peers=3)

  def lines():
    out = [r.getMessage() for r in caplog.records]
    caplog.clear()
    return out

  log.record('ipv4:10.0.0.2:50001')
  assert lines() == ['seed_rl.grpc: refused 1 call from ipv4:10.0.0.2 without the right token '
                     'in the last minute']
  for port in range(500):  # Every connection comes from another port: still the same host.
    clock.now += 0.1
    log.record(f'ipv4:10.0.0.2:{50002 + port}')
  assert lines() == []
  clock.now += 15
  log.record('ipv4:10.0.0.2:1')
  assert lines() == ['seed_rl.grpc: refused 501 calls from ipv4:10.0.0.2 without the right '
                     'token in the last minute']
  log.record('ipv6:%5B::1%5D:4127')
  assert lines() == ['seed_rl.grpc: refused 1 call from ipv6:[::1] without the right token in '
                     'the last minute']
  log.record('ipv4:10.0.0.2:2')
  clock.now += 600
  log.record('ipv4:10.0.0.2:3')
  assert lines() == ['seed_rl.grpc: refused 2 calls from ipv4:10.0.0.2 without the right token '
                     'in the last 10 minutes']


@pytest.mark.timeout(30)
def test_refusal_log_tracks_a_bounded_number_of_hosts(caplog):
  caplog.set_level(logging.INFO)
  clock = FakeClock()
  log = security.RefusalLog(logging.getLogger('seed_rl.grpc.test'), 'over the limit',
                            clock=clock, max_peers=2)
  for host in ('a', 'b', 'c', 'd'):
    log.record(f'ipv4:{host}:1')
  assert [r.getMessage() for r in caplog.records] == [
      f'seed_rl.grpc: refused 1 call from {host} over the limit in the last minute'
      for host in ('ipv4:a', 'ipv4:b', 'other hosts')]
  caplog.clear()
  log.flush()  # d was counted under 'other hosts'.
  assert [r.getMessage() for r in caplog.records] == [
      'seed_rl.grpc: refused 1 call from other hosts over the limit in the last minute']
  caplog.clear()
  for host in ('a', 'b'):
    log.record(f'ipv4:{host}:1')
  clock.now += 61  # a and b would be logged at once again: they make room for new hosts.
  log.record('ipv4:e:1')
  assert [r.getMessage() for r in caplog.records][-1] == (
      'seed_rl.grpc: refused 1 call from ipv4:e over the limit in the last minute')


@pytest.mark.timeout(30)
@pytest.mark.parametrize('peer, host', [
    ('ipv4:10.0.0.2:53211', 'ipv4:10.0.0.2'),
    ('ipv6:%5B::1%5D:4127', 'ipv6:[::1]'),
    ('ipv6:%5Bfd00::1%5D:80', 'ipv6:[fd00::1]'),
    ('unix:', 'unix:'),
    ('unix:/tmp/x.sock', 'unix:/tmp/x.sock'),
    ('', 'unknown'),
])
def test_peer_host(peer, host):
  assert security.peer_host(peer) == host


_REFUSALS_SCRIPT = r'''
import logging, sys
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format='%(name)s: %(message)s')
import grpc as grpcio
import tensorflow as tf
from seed_rl import grpc

@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def foo(x):
  return x + 1

address = sys.argv[1]
server = grpc.Server([address], token=b'secret')
server.bind(foo)
server.start()
assert grpc.Client(address, token=b'secret', timeout=60).foo(1) == 2  # TensorFlow has run.
print('REFUSALS START', file=sys.stderr, flush=True)
channel = grpcio.insecure_channel(address)
codes = set()
for _ in range(20):
  for method, arity in (('Init', 'unary_unary'), ('Call', 'stream_stream')):
    rpc = getattr(channel, arity)('/seed_rl.TensorService/' + method)
    try:
      response = rpc(b'\xff\xfe garbage' if arity == 'unary_unary' else iter([b'\xff garbage']),
                     timeout=30, wait_for_ready=True)
      next(response)
    except grpcio.RpcError as e:
      codes.add(e.code().name)
channel.close()
print('REFUSALS END', codes, file=sys.stderr, flush=True)
# No server.shutdown(): a script that forgets it must still exit (Server.__del__ at exit).
'''


@pytest.mark.timeout(180)
def test_refused_calls_write_no_traceback_nor_tensorflow_warning(tmp_path, sock_dir):
  """The learner's whole stderr (Python logging, TensorFlow's and gRPC's C++ logs at their most
  verbose) while an unauthenticated client sends garbage: one rate-limited line, nothing else."""
  script = tmp_path / 'refusals.py'
  script.write_text(_REFUSALS_SCRIPT)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='0', GRPC_VERBOSITY='ERROR',
             PYTHONPATH=_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
  result = subprocess.run([sys.executable, str(script), f'unix:{sock_dir}/refusals.sock'],
                          capture_output=True, text=True, timeout=170, env=env, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  during = result.stderr.split('REFUSALS START\n', 1)[1].split('REFUSALS END', 1)
  assert "{'UNAUTHENTICATED'}" in during[1], result.stderr[-3000:]
  assert during[0].splitlines() == [
      'seed_rl.grpc.server: seed_rl.grpc: refused 1 call from unix: without the right token in '
      'the last minute'], during[0]
  assert 'Traceback' not in result.stderr, result.stderr
