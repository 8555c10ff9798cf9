"""TLS and shared-token access control of seed_rl.grpc, and the flags that configure them."""

import queue
import subprocess
import types

import grpc as grpcio
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import security
from seed_rl.grpc import service_pb2


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
def test_kwargs_from_config(tmp_path, certs):
  _, _, cert_file, key_file = certs['server']
  token_file = tmp_path / 'token'
  token_file.write_bytes(b'  s3cret\n')
  config = types.SimpleNamespace(grpc_token_file=str(token_file),
                                 grpc_tls_cert_file=str(cert_file),
                                 grpc_tls_key_file=str(key_file),
                                 grpc_tls_ca_file=str(cert_file))
  server_kwargs = security.server_kwargs_from_config(config)
  assert server_kwargs == {'token': b's3cret', 'tls_certificate_chain': cert_file.read_bytes(),
                           'tls_private_key': key_file.read_bytes()}
  client_kwargs = security.client_kwargs_from_config(config)
  assert client_kwargs == {'token': b's3cret', 'tls_root_certificates': cert_file.read_bytes()}
  empty = types.SimpleNamespace(grpc_token_file=None, grpc_tls_cert_file=None,
                                grpc_tls_key_file=None, grpc_tls_ca_file=None)
  assert security.server_kwargs_from_config(empty) == {}
  assert security.client_kwargs_from_config(empty) == {}
  assert security.client_kwargs_from_config(object()) == {}


@pytest.mark.timeout(30)
def test_kwargs_from_config_errors(tmp_path, certs):
  _, _, cert_file, _ = certs['server']
  missing = str(tmp_path / 'missing.pem')
  with pytest.raises(ValueError, match=r"Cannot read the gRPC token file '.*missing.pem'"):
    security.client_kwargs_from_config(types.SimpleNamespace(grpc_token_file=missing))
  with pytest.raises(ValueError, match='TLS root CA file'):
    security.client_kwargs_from_config(types.SimpleNamespace(grpc_tls_ca_file=missing))
  with pytest.raises(ValueError, match='TLS private key file'):
    security.server_kwargs_from_config(types.SimpleNamespace(
        grpc_tls_cert_file=str(cert_file), grpc_tls_key_file=missing))
  with pytest.raises(ValueError, match='must be given together'):
    security.server_kwargs_from_config(types.SimpleNamespace(grpc_tls_cert_file=str(cert_file)))
  empty = tmp_path / 'empty'
  empty.write_bytes(b'\n')
  with pytest.raises(ValueError, match='is empty'):
    security.server_kwargs_from_config(types.SimpleNamespace(grpc_token_file=str(empty)))


@pytest.mark.timeout(30)
def test_flags_are_defined():
  from absl import flags  # pylint: disable=g-import-not-at-top
  from seed_rl.common import common_flags  # noqa: F401  pylint: disable=unused-import
  for name in ('grpc_token_file', 'grpc_tls_cert_file', 'grpc_tls_key_file', 'grpc_tls_ca_file'):
    assert flags.FLAGS[name].default is None
  assert flags.FLAGS['server_address'].default == 'localhost:8686'
