"""Which client stream a request came on, for validators that tell callers apart.

The server serves each client stream on one handler thread for the stream's whole life and runs
a method's validator on that thread (`Server.bind`), so `current()` there returns the `Stream`
of the request being validated. A validator may keep a `Stream` to tell later callers apart
(e.g. the learner refuses env ids that another, still open, stream owns) and read `closed` to
know whether that caller has gone: the server marks a stream closed as soon as it ends, however
it ends (the client closed it, its process died, the server stopped).
"""

import itertools
import threading
from typing import Optional

_ids = itertools.count(1)
_local = threading.local()


class Stream(object):
  """One client stream (one actor connection): a process-unique `id`, the client's `peer`
  address (as gRPC gives it; 'shm:NAME:pid=PID' for a shared-memory connection), and whether
  it has `closed`."""

  __slots__ = ('id', 'peer', 'closed')

  def __init__(self, peer: str):
    self.id = next(_ids)
    self.peer = peer
    self.closed = False

  def __repr__(self) -> str:
    return f'Stream({self.id}, {self.peer!r}{", closed" if self.closed else ""})'


def current() -> Optional[Stream]:
  """The stream whose request this thread serves, or None outside a server's stream handler
  (e.g. a validator called directly)."""
  return getattr(_local, 'stream', None)


def open_stream(peer: str) -> Stream:
  """Called by the server on the handler thread of a new stream: it becomes `current()`."""
  stream = Stream(peer)
  _local.stream = stream
  return stream


def close_stream(stream: Stream) -> None:
  """Called by the server when `stream` ends, on its handler thread."""
  stream.closed = True
  if getattr(_local, 'stream', None) is stream:
    _local.stream = None
