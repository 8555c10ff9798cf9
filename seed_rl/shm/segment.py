"""The shared memory of one connection: a request area and a response area in one memfd.

A memfd has no name in any file system (not in /dev/shm): the server makes it, maps it, and hands
its descriptor to the client over the rendezvous socket; the memory is freed when the last
process that maps it unmaps it or exits, kill -9 included, so that nothing can leak.
"""

import mmap
import os
from typing import Tuple


class Segment:
  """A mapped segment: `request_bytes` bytes for a request, then `response_bytes` for a response.

  Use `create` (server) or `attach` (client).
  """

  def __init__(self, fd: int, request_bytes: int, response_bytes: int):
    self.request_bytes = request_bytes
    self.response_bytes = response_bytes
    try:
      self._map = mmap.mmap(fd, request_bytes + response_bytes)
    finally:
      os.close(fd)  # The mapping keeps the memory.

  @classmethod
  def create(cls, request_bytes: int, response_bytes: int) -> Tuple['Segment', int]:
    """A new segment, and a descriptor of it to send to the client (close it once sent).

    Its pages are taken as they are first written: a large area costs only what is used."""
    request_bytes, response_bytes = max(1, request_bytes), max(1, response_bytes)
    fd = os.memfd_create('seed_rl_shm', os.MFD_CLOEXEC)
    try:
      os.ftruncate(fd, request_bytes + response_bytes)
      return cls(os.dup(fd), request_bytes, response_bytes), fd
    except BaseException:
      os.close(fd)
      raise

  @classmethod
  def attach(cls, fd: int, request_bytes: int, response_bytes: int) -> 'Segment':
    """Maps the segment whose descriptor `fd` the server sent (and closes `fd`)."""
    if os.fstat(fd).st_size < request_bytes + response_bytes:
      os.close(fd)
      raise ValueError('the shared-memory segment is smaller than its areas')
    return cls(fd, request_bytes, response_bytes)

  def write_request(self, data: bytes) -> None:
    self._map[:len(data)] = data

  def read_request(self, size: int) -> bytes:
    return self._map[:size]

  def write_response(self, data: bytes) -> None:
    start = self.request_bytes
    self._map[start:start + len(data)] = data

  def read_response(self, size: int) -> bytes:
    start = self.request_bytes
    return self._map[start:start + size]

  def close(self) -> None:
    try:
      self._map.close()
    except BufferError:
      pass  # A view of it is still alive; the mapping goes with the process.
