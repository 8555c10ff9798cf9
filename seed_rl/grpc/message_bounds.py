"""How large a server's messages can be, and how many request bytes it may hold (numpy only).

gRPC's C core refuses a message longer than its `grpc.max_receive_message_length` from the
message's 5-byte length prefix, before it buffers the body, and ends that stream with
RESOURCE_EXHAUSTED. Once a server's functions are bound, the largest request it can ever serve is
known: a direct call of the full batch, every argument at its signature's shape. Making that
(plus `MARGIN`) the receive limit bounds what one client stream can make the learner hold to one
valid request, whatever size a client announces. The largest response is known the same way.
A message of strings or of dimensions the signature leaves open has no such bound; the server
then falls back to a fixed cap.

`default_max_bytes_in_flight` sizes the server's cap on request bytes held at once to the
machine, instead of a fixed figure that may exceed a small machine's memory.
"""

import os
from typing import Iterable, Optional, Sequence

from seed_rl.grpc import batching
from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2

#: Bytes added to the largest message the bound functions exchange: room for an error
#: response's message (which may be longer than a small function's outputs).
MARGIN = 64 * 1024

#: The fraction of the machine's memory that requests in flight may hold by default.
MEMORY_FRACTION_IN_FLIGHT = 1 / 8

# Where a cgroup v2 container's memory limit is read (it may be below the machine's memory).
_CGROUP_MEMORY_MAX = '/sys/fs/cgroup/memory.max'
_FALLBACK_MEMORY_BYTES = 8 << 30


def _field_bytes(size: int) -> int:
  """Bytes of a length-delimited protobuf field of `size` bytes: tag, length varint, body."""
  return 1 + (max(size, 1).bit_length() + 6) // 7 + size


def tensor_bytes(code: int, shape: Optional[Sequence[Optional[int]]]) -> Optional[int]:
  """Encoded bytes of a `Tensor` of wire dtype `code` and `shape`, as a field of its message.

  None for a shape of unknown rank or dimension, or for strings: their size has no bound.
  """
  if code == codec.DT_STRING or shape is None or any(d is None for d in shape):
    return None
  count = 1
  for d in shape:
    count *= d
  content = count * codec.DTYPE_BY_CODE[code].itemsize
  skeleton = service_pb2.Tensor(dtype=code, shape=list(shape)).ByteSize()
  return _field_bytes(skeleton + (_field_bytes(content) if content else 0))


def request_bytes(name: str, args: Sequence[batching.ArgSpec]) -> Optional[int]:
  """Encoded bytes of the largest `CallRequest` a method accepts: every argument at its full
  shape (a batched method's blocks of rows and single rows are smaller); None if unbounded."""
  total = _field_bytes(len(name.encode('utf-8')))
  for arg in args:
    size = tensor_bytes(arg.code, arg.shape)
    if size is None:
      return None
    total += size
  return total


def response_bytes(output_codes: Sequence[int],
                   output_shapes: Sequence[Optional[Sequence[Optional[int]]]],
                   batch_size: Optional[int]) -> Optional[int]:
  """Encoded bytes of a method's largest successful `CallResponse` (all rows of a batch); an
  unknown leading dimension of a batched method's output is its batch size. None if unbounded.
  """
  total = 0
  for code, shape in zip(output_codes, output_shapes):
    if batch_size is not None and shape and shape[0] is None:
      shape = (batch_size,) + tuple(shape[1:])
    size = tensor_bytes(code, shape)
    if size is None:
      return None
    total += size
  return total


def max_message_bytes(bounds: Iterable[Optional[int]], fallback: int) -> int:
  """The message limit for messages of sizes up to `bounds` (one per method): the largest plus
  `MARGIN`, or `fallback` when a bound is None (no bound) or there is no method."""
  bounds = list(bounds)
  if not bounds or any(b is None for b in bounds):
    return fallback
  return max(bounds) + MARGIN


def memory_bytes() -> int:
  """The memory this process may use: the machine's, or its container's limit when lower."""
  try:
    total = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
  except (ValueError, OSError, AttributeError):
    total = _FALLBACK_MEMORY_BYTES
  try:
    with open(_CGROUP_MEMORY_MAX, encoding='ascii') as f:
      limit = f.read().strip()
  except OSError:
    return total
  return min(total, int(limit)) if limit.isdigit() else total


def default_max_bytes_in_flight() -> int:
  """`MEMORY_FRACTION_IN_FLIGHT` of `memory_bytes()`."""
  return int(memory_bytes() * MEMORY_FRACTION_IN_FLIGHT)
