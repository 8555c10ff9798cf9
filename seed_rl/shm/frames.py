"""What the two sides of a `shm:` connection say over its socket: the handshake and the lengths.

Handshake: the client sends `HELLO` and its token (empty for none); the server answers with a
status (0, or the code and message of a refusal such as UNAUTHENTICATED), the sizes of the
segment's request and response areas, the serialized InitResponse, and, when it serves, the
segment's file descriptor. Calls: one length each way (`send_length`, `recv_length`), whose
arrival is the wake-up: a request or a response of that many bytes is in the segment.
"""

import array
import socket
import struct
from typing import List, Optional, Tuple

HELLO = b'SEEDSHM1'
_TOKEN = struct.Struct('<I')
# code, message length, request area bytes, response area bytes, InitResponse length.
_WELCOME = struct.Struct('<IIQQI')
_LENGTH = struct.Struct('<Q')


class ProtocolError(ConnectionError):
  """The other side said something that is not this protocol, or went away during the handshake."""


def _recv_exact(sock: socket.socket, size: int) -> bytes:
  """`size` bytes from `sock`; ProtocolError if it ends first."""
  parts, left = [], size
  while left:
    part = sock.recv(left)
    if not part:
      raise ProtocolError(f'the connection ended after {size - left} of {size} bytes')
    parts.append(part)
    left -= len(part)
  return b''.join(parts)


def send_hello(sock: socket.socket, token: Optional[bytes]) -> None:
  token = token or b''
  sock.sendall(HELLO + _TOKEN.pack(len(token)) + token)


def recv_hello(sock: socket.socket, max_token_bytes: int = 4096) -> bytes:
  """The token a client presented (b'' for none)."""
  head = _recv_exact(sock, len(HELLO) + _TOKEN.size)
  if head[:len(HELLO)] != HELLO:
    raise ProtocolError('not a seed_rl shared-memory client')
  (size,) = _TOKEN.unpack_from(head, len(HELLO))
  if size > max_token_bytes:
    raise ProtocolError(f'token of {size} bytes')
  return _recv_exact(sock, size)


def send_welcome(sock: socket.socket, code: int, message: str, request_bytes: int = 0,
                 response_bytes: int = 0, init: bytes = b'', fd: Optional[int] = None) -> None:
  text = message.encode('utf-8')
  data = _WELCOME.pack(code, len(text), request_bytes, response_bytes, len(init)) + text + init
  if fd is None:
    sock.sendall(data)
    return
  sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])
  if sent < len(data):
    sock.sendall(data[sent:])


def recv_welcome(sock: socket.socket) -> Tuple[int, str, int, int, bytes, Optional[int]]:
  """(code, message, request area bytes, response area bytes, InitResponse, segment fd or None).

  Closes any descriptor received with a refusal."""
  head, fds, _, _ = socket.recv_fds(sock, _WELCOME.size, 1)
  if not head:
    raise ProtocolError('the server closed the connection during the handshake')
  head += _recv_exact(sock, _WELCOME.size - len(head))
  code, text_size, request_bytes, response_bytes, init_size = _WELCOME.unpack(head)
  message = _recv_exact(sock, text_size).decode('utf-8', 'replace')
  init = _recv_exact(sock, init_size)
  fd = fds[0] if fds else None
  _close_all(fds[1:] if code == 0 else fds)
  return code, message, request_bytes, response_bytes, init, (fd if code == 0 else None)


def _close_all(fds: List[int]) -> None:
  for fd in fds:
    try:
      socket.close(fd)
    except OSError:
      pass


def send_length(sock: socket.socket, size: int) -> None:
  """Says that a message of `size` bytes is in the segment (and wakes the other side)."""
  sock.sendall(_LENGTH.pack(size))


class LengthReader:
  """Reads the lengths the other side sends, into one buffer made once."""

  def __init__(self, sock: socket.socket):
    self._sock = sock
    self._buffer = bytearray(_LENGTH.size)
    self._view = memoryview(self._buffer)

  def read(self) -> Optional[int]:
    """The next length, or None when the connection has ended (EOF, reset or shut down)."""
    got = 0
    while got < _LENGTH.size:
      try:
        n = self._sock.recv_into(self._view[got:])
      except OSError:
        return None
      if not n:
        return None
      got += n
    return _LENGTH.unpack(self._buffer)[0]
