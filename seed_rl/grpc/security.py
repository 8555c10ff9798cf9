"""Optional transport security of the RPC layer: TLS and a shared token (numpy/TF free).

A learner listening on a public address should serve only its own actors. Two independent
mechanisms, both off by default (as in the original, which used insecure credentials only):
- TLS: the server presents a certificate chain and private key (PEM); clients verify it against a
  root CA (PEM). Encrypts the traffic and authenticates the server.
- Token: a shared secret (bytes) that every client sends as call metadata; the server refuses
  calls without it (UNAUTHENTICATED) before any bound function is reached, Init included.
  Without TLS the token travels in clear text, so use both on untrusted networks.

TLS alone does not keep anyone out: it authenticates the server to the clients, not the clients
to the server. Only the token does that.

The server checks the token from the call metadata before it reads a request's body, and logs
refused calls through a `RefusalLog`: at most one line per client host and minute, so that a
stranger knocking at the port cannot fill the learner's log.

A server that listens beyond the loopback interface without a token says so once when it starts
(`warn_if_open`): anyone who can reach its port can call it.

gRPC's C core logs one INFO line per failed TLS handshake, so that anyone who opens a TCP
connection to a TLS learner and sends anything else (a port scanner, a plain-text client) adds a
line to its log. The core reads `GRPC_VERBOSITY` once, when grpcio is first imported, and offers
no way to change it later; importing this module before grpcio keeps the core's ERROR lines only,
unless `GRPC_VERBOSITY` is already set (e.g. `GRPC_VERBOSITY=INFO` to see every handshake).

`SecurityFiles` holds the files of the `grpc_token_file`, `grpc_tls_cert_file`,
`grpc_tls_key_file` and `grpc_tls_ca_file` flags; its `server_kwargs` / `client_kwargs` read them
into constructor keyword arguments of `Server` / `Client`.
"""

import dataclasses
import hmac
import ipaddress
import logging
import math
import os
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

#: Verbosity of gRPC's C core unless the environment sets one (read when grpcio loads).
GRPC_VERBOSITY_DEFAULT = 'ERROR'
os.environ.setdefault('GRPC_VERBOSITY', GRPC_VERBOSITY_DEFAULT)

import grpc  # pylint: disable=g-import-not-at-top,wrong-import-position  # noqa: E402

#: Binary metadata key carrying the token (the -bin suffix lets it hold arbitrary bytes).
TOKEN_METADATA_KEY = 'seed-rl-token-bin'


def token_metadata(token: Optional[bytes]) -> Optional[Tuple[Tuple[str, bytes], ...]]:
  """Call metadata that presents `token` (None without a token)."""
  if token is None:
    return None
  return ((TOKEN_METADATA_KEY, bytes(token)),)


def has_token(metadata: Optional[Sequence[Tuple[str, Any]]], token: bytes) -> bool:
  """True if `metadata` presents `token` (compared in constant time)."""
  for key, value in metadata or ():
    if key == TOKEN_METADATA_KEY:
      if isinstance(value, str):
        value = value.encode('utf-8')
      return hmac.compare_digest(value, token)
  return False


def peer_host(peer: str) -> str:
  """The client part of a gRPC peer string without its port, URL-decoded.

  Every connection of a host comes from another port, so refusals are counted per host:
  'ipv4:10.0.0.2:53211' -> 'ipv4:10.0.0.2', 'ipv6:%5B::1%5D:4127' -> 'ipv6:[::1]',
  'unix:' stays as it is.
  """
  kind, sep, rest = (peer or 'unknown').partition(':')
  if sep and kind in ('ipv4', 'ipv6') and ':' in rest:
    rest = rest.rsplit(':', 1)[0]
  return urllib.parse.unquote(kind + sep + rest)


class RefusalLog:
  """Counts refused calls per client host and logs at most one line per host and period.

  The first refusal from a host is logged at once; later ones are counted and reported with the
  first refusal after `period` seconds, or by `flush` (at server shutdown). A client that keeps
  retrying (or a scanner) thus costs one log line a minute, not one per call. At most `max_peers`
  hosts are tracked; beyond that, refusals of new hosts are counted under 'other hosts'.

  Args:
    logger: where the lines go (warning level).
    reason: what the refused calls lacked or exceeded, e.g. 'without the right token'.
    period: seconds between two lines about the same host.
    clock: monotonic time in seconds (tests pass a fake one).
    max_peers: hosts tracked at once.
  """

  _OTHERS = 'other hosts'

  def __init__(self, logger: logging.Logger, reason: str, period: float = 60.0,
               clock: Callable[[], float] = time.monotonic, max_peers: int = 1024):
    self._logger = logger
    self._reason = reason
    self._period = period
    self._clock = clock
    self._max_peers = max_peers
    self._lock = threading.Lock()
    # host -> [time of its last line, refusals not logged yet, time of the first of them]
    self._peers: Dict[str, List[float]] = {}

  def record(self, peer: str) -> None:
    """Counts one refused call of `peer` (a gRPC peer string); logs if the period has passed."""
    host = peer_host(peer)
    now = self._clock()
    with self._lock:
      host, entry = self._entry(host, now)
      if not entry[1]:
        entry[2] = now
      entry[1] += 1
      if now - entry[0] < self._period:
        return
      line = self._line(host, entry, now)
      entry[0], entry[1] = now, 0
    self._logger.warning(line)

  def flush(self) -> None:
    """Logs the refusals not reported yet (one line per host) and forgets every host."""
    now = self._clock()
    with self._lock:
      lines = [self._line(host, entry, now) for host, entry in self._peers.items() if entry[1]]
      self._peers.clear()
    for line in lines:
      self._logger.warning(line)

  def _entry(self, host: str, now: float) -> Tuple[str, List[float]]:
    """(host, its entry), made if new; hosts that would log at once anyway make room for new
    ones, and when none does, the host is counted as 'other hosts'."""
    entry = self._peers.get(host)
    if entry is not None:
      return host, entry
    if len(self._peers) >= self._max_peers:
      for old in [h for h, e in self._peers.items() if not e[1] and now - e[0] >= self._period]:
        del self._peers[old]
      if len(self._peers) >= self._max_peers:
        host = self._OTHERS
    return host, self._peers.setdefault(host, [-math.inf, 0, now])

  def _line(self, host: str, entry: List[float], now: float) -> str:
    count = int(entry[1])
    minutes = max(1, round((now - entry[2]) / 60))
    window = 'the last minute' if minutes <= 1 else f'the last {minutes} minutes'
    return (f'seed_rl.grpc: refused {count} call{"" if count == 1 else "s"} from {host} '
            f'{self._reason} in {window}')


def is_loopback(address: str) -> bool:
  """True if a server address ('host:port', '[v6]:port', 'unix:/path') accepts only clients of
  this machine: a unix socket, localhost or a loopback IP."""
  if address.startswith(('unix:', 'unix-abstract:')):
    return True
  for scheme in ('ipv4:', 'ipv6:', 'dns:'):
    if address.startswith(scheme):
      address = address[len(scheme):].lstrip('/')
  host = address.rsplit(':', 1)[0] if ':' in address else address
  host = host[1:-1] if host.startswith('[') and host.endswith(']') else host
  if host.lower() == 'localhost':
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:  # A host name, or '' (every interface).
    return False


def warn_if_open(addresses: Sequence[str], ports: Sequence[int], has_token: bool,
                 has_tls: bool, logger: logging.Logger) -> None:
  """Logs one warning if a server without a token listens beyond loopback.

  Args:
    addresses: the addresses the server listens on.
    ports: the port bound for each address.
    has_token: whether the server requires a token.
    has_tls: whether the server serves TLS.
    logger: where the warning goes.
  """
  if has_token:
    return
  open_ports = [str(port) for address, port in zip(addresses, ports) if not is_loopback(address)]
  if not open_ports:
    return
  plural = 's' if len(open_ports) > 1 else ''
  tls = ('' if has_tls else '; without TLS (--grpc_tls_cert_file, --grpc_tls_key_file) the '
         'traffic is not encrypted either')
  logger.warning('seed_rl.grpc: no token: anyone who can reach port%s %s can call the learner; '
                 'set a token: --grpc_token_file (Server(..., token=...))%s', plural,
                 ', '.join(open_ports), tls)


def check_token(token: Optional[bytes]) -> Optional[bytes]:
  """Validates a token argument; returns it as bytes."""
  if token is None:
    return None
  if isinstance(token, str):
    token = token.encode('utf-8')
  if not isinstance(token, (bytes, bytearray)):
    raise TypeError(f'token must be bytes, got {type(token).__name__}.')
  if not token:
    raise ValueError('token must not be empty.')
  return bytes(token)


def server_credentials(certificate_chain: Optional[bytes],
                       private_key: Optional[bytes]) -> Optional[grpc.ServerCredentials]:
  """TLS credentials of the server, or None for an insecure port."""
  if certificate_chain is None and private_key is None:
    return None
  if certificate_chain is None or private_key is None:
    raise ValueError('TLS needs both a certificate chain and a private key '
                     f'(got {"only the chain" if private_key is None else "only the key"}).')
  return grpc.ssl_server_credentials([(bytes(private_key), bytes(certificate_chain))])


def channel_credentials(root_certificates: Optional[bytes],
                        use_tls: Optional[bool]) -> Optional[grpc.ChannelCredentials]:
  """TLS credentials of a client channel, or None for an insecure channel.

  `use_tls=None` means TLS iff root certificates are given; `use_tls=True` without roots verifies
  the server against the system's default roots.
  """
  if use_tls is None:
    use_tls = root_certificates is not None
  if not use_tls:
    if root_certificates is not None:
      raise ValueError('tls_root_certificates given but use_tls=False.')
    return None
  return grpc.ssl_channel_credentials(
      root_certificates=None if root_certificates is None else bytes(root_certificates))


def read_file(path: str, what: str) -> bytes:
  """Reads a whole file, with an error that names the flag's purpose and the path."""
  try:
    with open(path, 'rb') as f:
      return f.read()
  except OSError as e:
    raise ValueError(f'Cannot read the {what} file {path!r}: {e.strerror or e}') from e


def read_token_file(path: str) -> bytes:
  """Reads a token file; surrounding whitespace (e.g. the newline of `echo`) is not part of it."""
  token = read_file(path, 'gRPC token').strip()
  if not token:
    raise ValueError(f'The gRPC token file {path!r} is empty.')
  return token


@dataclasses.dataclass(frozen=True)
class SecurityFiles:
  """The files of the grpc_* flags (`--grpc_token_file`, `--grpc_tls_cert_file`,
  `--grpc_tls_key_file`, `--grpc_tls_ca_file`); None: not used.

  The learner builds it from its config's fields (it serves: token, certificate and key), an
  actor from its flags (it calls: token and root CA).
  """
  token_file: Optional[str] = None
  tls_cert_file: Optional[str] = None
  tls_key_file: Optional[str] = None
  tls_ca_file: Optional[str] = None

  def server_kwargs(self) -> Dict[str, Any]:
    """`Server` keyword arguments: the token, certificate chain and private key read.

    Raises:
      ValueError: an unreadable or empty file, or a certificate without a key (or the reverse).
    """
    kwargs: Dict[str, Any] = {}
    if self.token_file:
      kwargs['token'] = read_token_file(self.token_file)
    if bool(self.tls_cert_file) != bool(self.tls_key_file):
      raise ValueError('--grpc_tls_cert_file and --grpc_tls_key_file must be given together.')
    if self.tls_cert_file:
      kwargs['tls_certificate_chain'] = read_file(self.tls_cert_file, 'TLS certificate chain')
      kwargs['tls_private_key'] = read_file(self.tls_key_file, 'TLS private key')
    return kwargs

  def client_kwargs(self) -> Dict[str, Any]:
    """`Client` keyword arguments: the token and root CA read.

    Raises:
      ValueError: an unreadable or empty file.
    """
    kwargs: Dict[str, Any] = {}
    if self.token_file:
      kwargs['token'] = read_token_file(self.token_file)
    if self.tls_ca_file:
      kwargs['tls_root_certificates'] = read_file(self.tls_ca_file, 'TLS root CA')
    return kwargs
