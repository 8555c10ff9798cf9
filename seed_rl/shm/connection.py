"""The client side of `shm:NAME`: one connection, one call at a time (standard library only)."""

import os
import socket
import time
from typing import Optional

from seed_rl.shm import address as address_lib
from seed_rl.shm import frames
from seed_rl.shm import segment as segment_lib

# Pauses between attempts to reach a server that is not up yet: short at first, then as gRPC's
# client does (an attempt every 0.5 s).
_FIRST_RETRY_SECS = 0.05
_MAX_RETRY_SECS = 0.5
# How long a server that accepted the connection has to answer the handshake.
_HANDSHAKE_SECS = 30.0


class Unreachable(ConnectionError):
  """No server answered at the address, or the connection ended."""


class Refused(Exception):
  """The server refused the client at the handshake, with a status `code` and `message`."""

  def __init__(self, code: int, message: str):
    super().__init__(message)
    self.code = code
    self.message = message


class TooLarge(ValueError):
  """A request larger than the server's request area (its message limit); nothing was sent."""

  def __init__(self, size: int, limit: int):
    super().__init__(f'Sent message larger than max ({size} vs. {limit})')
    self.size = size
    self.limit = limit


class Connection:
  """A connection to the server of `shm:NAME`, made at once.

  Args:
    address: 'shm:NAME'.
    timeout: seconds to wait for the server to come up; None waits forever, 0 tries once.
    token: the server's token, if it has one.
  Raises:
    address_lib.AddressError: a malformed NAME.
    Unreachable: no server came up in time.
    Refused: the server refused the client (wrong token, too many streams, training finished).
  """

  def __init__(self, address: str, timeout: Optional[float], token: Optional[bytes] = None):
    self._socket = _connect(address, timeout)
    try:
      self._socket.settimeout(_HANDSHAKE_SECS)
      frames.send_hello(self._socket, token)
      code, message, request_bytes, response_bytes, init, fd = frames.recv_welcome(self._socket)
      if code:
        raise Refused(code, message)
      if fd is None:
        raise frames.ProtocolError('the server sent no shared-memory segment')
      self._segment = segment_lib.Segment.attach(fd, request_bytes, response_bytes)
      self._socket.settimeout(None)
    except (OSError, ValueError) as e:
      self._socket.close()
      raise Unreachable(f'Handshake with the server at {address} failed: {e}') from None
    except BaseException:
      self._socket.close()
      raise
    #: The serialized InitResponse: the signatures of the server's methods.
    self.init_response = init
    self._lengths = frames.LengthReader(self._socket)

  def exchange(self, request: bytes) -> bytes:
    """Sends `request` and returns the bytes of the response.

    Raises:
      TooLarge: the request exceeds the server's limit (the connection stays usable).
      Unreachable: the connection ended (server gone, or `close` called).
    """
    segment = self._segment
    if len(request) > segment.request_bytes:
      raise TooLarge(len(request), segment.request_bytes)
    segment.write_request(request)
    try:
      frames.send_length(self._socket, len(request))
    except OSError as e:
      raise Unreachable(f'the connection ended ({e})') from None
    size = self._lengths.read()
    if size is None or size > segment.response_bytes:
      raise Unreachable('the connection ended')
    return segment.read_response(size)

  def interrupt(self) -> None:
    """Ends the connection, so that a call in flight in another thread returns at once."""
    try:
      self._socket.shutdown(socket.SHUT_RDWR)
    except OSError:
      pass

  def close(self) -> None:
    """Ends the connection and frees its memory; `exchange` must not run any more."""
    self.interrupt()
    self._socket.close()
    self._segment.close()


def _connect(address: str, timeout: Optional[float]) -> socket.socket:
  """A socket connected to the server of `address`, tried until `timeout` seconds have passed.

  Raises:
    Unreachable: no server came up in time, or the one listening there runs as another user.
  """
  name = address_lib.socket_address(address)
  deadline = None if timeout is None else time.monotonic() + timeout
  pause = _FIRST_RETRY_SECS
  while True:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
      sock.connect(name)
      break
    except (FileNotFoundError, ConnectionRefusedError) as e:
      sock.close()
      reason = e.strerror
    except BaseException:
      sock.close()
      raise
    if deadline is not None and time.monotonic() + pause > deadline:
      raise Unreachable(f'Server at {address} is not reachable: no answer within {timeout} s '
                        f'(no server of user {os.getuid()} listens there: {reason})')
    time.sleep(pause)
    pause = min(2 * pause, _MAX_RETRY_SECS)
  pid, uid = address_lib.peer_user(sock)
  if uid != os.getuid():
    sock.close()
    raise Unreachable(f'Server at {address} is not reachable: the process listening there (pid '
                      f'{pid}) runs as user {uid}, not as this user ({os.getuid()})')
  return sock
