"""The server side of `shm:NAME`: accepts connections and serves each on a thread of its own.

Like gRPC's synchronous server, each open connection (one actor's stream) parks one thread. The
thread reads a request from the segment when its length arrives, has the handler answer it, and
writes the response back; the handler is the same code that serves gRPC streams (token, limits,
batching, validation), so that both transports behave alike.
"""

import errno
import logging
import os
import socket
import threading
import time
from typing import Iterator, Optional, Protocol, Set, Tuple

from seed_rl.shm import address as address_lib
from seed_rl.shm import frames
from seed_rl.shm import segment as segment_lib

# A client has this long to present itself after it connects.
_HANDSHAKE_SECS = 10.0
_STOP_POLL_SECS = 0.005
# How long `stop` waits for the accepting thread to return once its socket is shut down.
_ACCEPT_EXIT_SECS = 10.0

_log = logging.getLogger(__name__)


class Handler(Protocol):
  """What a `Listener` serves (the central-inference server's run)."""

  def shm_welcome(self, token: Optional[bytes], peer: str) -> Tuple[int, str, bytes]:
    """(0, '', serialized InitResponse) to serve the client `peer`, else the status code and
    message of its refusal."""

  def shm_serve(self, requests: Iterator[bytes], peer: str,
                max_response_bytes: int) -> Iterator[bytes]:
    """One response per request of the stream, none larger than `max_response_bytes`."""


class Listener:
  """Serves `shm:NAME` to a handler until `stop`.

  Args:
    address: 'shm:NAME'.
    handler: serves the connections.
    request_bytes: the largest request served (the size of each segment's request area).
    response_bytes: the largest response (the size of its response area).
  Raises:
    address_lib.AddressError: a malformed NAME.
    OSError: another live server serves NAME, or the socket cannot be made.
  """

  def __init__(self, address: str, handler: Handler, request_bytes: int, response_bytes: int):
    self._name = address_lib.check_name(address)
    self._handler = handler
    self._sizes = (request_bytes, response_bytes)
    self._connections: Set[socket.socket] = set()
    self._lock = threading.Lock()
    self._stopped = False
    self._socket = _listen(address)
    self._thread = threading.Thread(target=self._accept, daemon=True,
                                    name=f'seed_rl_shm_accept_{self._name}')
    self._thread.start()

  def _accept(self) -> None:
    while True:
      try:
        conn, _ = self._socket.accept()
      except OSError:
        return  # Stopped.
      with self._lock:
        if self._stopped:
          conn.close()
          return
        self._connections.add(conn)
      threading.Thread(target=self._serve, args=(conn,), daemon=True,
                       name=f'seed_rl_grpc_shm_{self._name}').start()

  def _serve(self, conn: socket.socket) -> None:
    """One connection, from the handshake to its end."""
    segment = None
    try:
      pid, uid = address_lib.peer_user(conn)
      peer = f'shm:{self._name}:pid={pid}'
      if uid != os.getuid():
        _log.warning('seed_rl.shm: refused %s, a process of user %d (this server serves user '
                     '%d only)', peer, uid, os.getuid())
        return
      conn.settimeout(_HANDSHAKE_SECS)
      try:
        token = frames.recv_hello(conn)
      except (frames.ProtocolError, OSError):
        return
      code, message, init = self._handler.shm_welcome(token or None, peer)
      if code:
        try:
          frames.send_welcome(conn, code, message)
        except OSError:
          pass
        return
      requests = iter(())
      try:
        segment, fd = segment_lib.Segment.create(*self._sizes)
        try:
          frames.send_welcome(conn, 0, '', *self._sizes, init, fd)
        finally:
          os.close(fd)
        conn.settimeout(None)
        requests = _requests(conn, segment)
      except OSError:
        pass
      responses = self._handler.shm_serve(requests, peer, segment.response_bytes
                                          if segment is not None else 0)
      try:
        for response in responses:
          segment.write_response(response)
          frames.send_length(conn, len(response))
      except OSError:
        pass  # The client went away; its stream ends.
      finally:
        responses.close()
    except Exception:  # pylint: disable=broad-except
      _log.exception('seed_rl.shm: unexpected error while serving a connection of shm:%s',
                     self._name)
    finally:
      with self._lock:
        self._connections.discard(conn)
      conn.close()
      if segment is not None:
        segment.close()

  def stop(self, grace: float) -> None:
    """Stops accepting (which frees the name); ends every connection, those that are still
    answering a call after `grace` seconds too (their clients see the stream end)."""
    with self._lock:
      self._stopped = True
      connections = list(self._connections)
    _shutdown(self._socket, socket.SHUT_RDWR)  # Wakes the accepting thread ...
    self._socket.close()
    # ... whose pending accept holds the socket, and so its name, until the thread returns: a
    # server started at once at this address must find the name free.
    if threading.current_thread() is not self._thread:
      self._thread.join(_ACCEPT_EXIT_SECS)
    for conn in connections:
      _shutdown(conn, socket.SHUT_RD)  # Ends the ones waiting for their next request.
    deadline = time.monotonic() + grace
    while self._connections and time.monotonic() < deadline:
      time.sleep(_STOP_POLL_SECS)
    with self._lock:
      connections = list(self._connections)
    for conn in connections:
      _shutdown(conn, socket.SHUT_RDWR)


def _requests(conn: socket.socket, segment: segment_lib.Segment) -> Iterator[bytes]:
  """The requests of a connection, until it ends (or says a length beyond the request area,
  which no client of this package does)."""
  lengths = frames.LengthReader(conn)
  while True:
    size = lengths.read()
    if size is None or size > segment.request_bytes:
      return
    yield segment.read_request(size)


def _shutdown(sock: socket.socket, how: int) -> None:
  try:
    sock.shutdown(how)
  except OSError:
    pass


def _listen(address: str) -> socket.socket:
  """A socket listening at `address`'s abstract name (free again once the socket is closed,
  however its process ends)."""
  sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  try:
    try:
      sock.bind(address_lib.socket_address(address))
    except OSError as e:
      if e.errno == errno.EADDRINUSE:
        raise OSError(errno.EADDRINUSE, f'another server already serves {address}') from None
      raise
    sock.listen(socket.SOMAXCONN)
  except BaseException:
    sock.close()
    raise
  return sock
