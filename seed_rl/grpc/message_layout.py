"""Reading the tensors of a message laid out like a known one from its bytes, without parsing.

Both per-step messages repeat themselves but for their values: an actor sends the same request
every step (the same function, tensors of the same dtypes and shapes) and gets the same response
back; and both sides write them the same way (`wire`, like protobuf's own serializer, writes each
field's header and then its bytes). Parsing a message and reading its tensors' dtypes and shapes
again costs the server and the client Python on every message, at a point where each µs delays
the next step several times over (docs/performance.md, The RPC layer). A `MessageLayout`, learnt
from one parsed message, knows where the headers and contents lie: a message of the same length
whose header bytes are equal at the same offsets is the same message but for its contents, which
it returns as arrays on the bytes, for a fraction of the cost.

Why equal headers suffice: the headers and contents tile the whole message, and every content
lies inside a length-delimited field whose length is in the header before it; so a message that
agrees with the learnt one on every header byte parses to the same function, dtypes and shapes
(and, for a response, to a status of OK: a status is a field of its own), whatever its contents
hold.
"""

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire


class MessageLayout:
  """Where the tensors' contents lie in the messages of one function, dtypes and shapes.

  Attributes:
    size: length in bytes of every message of this layout.
    spans: (start, end) of each tensor's content in the message's bytes.
  """

  __slots__ = ('size', '_headers', 'spans', '_arrays')

  def __init__(self, size: int, headers: Sequence[Tuple[int, bytes]],
               spans: Sequence[Tuple[int, int]],
               arrays: Sequence[Tuple[np.dtype, Tuple[int, ...]]]):
    self.size = size
    self._headers = tuple(headers)  # (offset, bytes) of everything but the contents
    self.spans = tuple(spans)
    # (wire dtype, shape) of each tensor, with the start of its content.
    self._arrays = tuple((dtype, shape, start) for (dtype, shape), (start, _) in
                         zip(arrays, spans))

  def matches(self, data: bytes) -> bool:
    """Whether `data` is a message of this layout."""
    if len(data) != self.size:
      return False
    for offset, header in self._headers:
      if not data.startswith(header, offset):
        return False
    return True

  def arrays(self, data: bytes) -> List[np.ndarray]:
    """The tensors of `data`, a message of this layout (see `matches`), as arrays on its bytes
    (read-only: `bytes` are)."""
    return [np.ndarray(shape, dtype, data, start) for dtype, shape, start in self._arrays]


def learn_request(data: bytes, request: service_pb2.CallRequest) -> Optional[MessageLayout]:
  """The layout of `data`, the bytes `request` was parsed from; None if some tensor holds
  strings or `data` is not the plain encoding of `request` (e.g. fields in another order)."""
  return _learn(data, wire.request_function_field(request.function), wire.request_tensor_header,
                request.tensor)


def learn_response(data: bytes, response: service_pb2.CallResponse) -> Optional[MessageLayout]:
  """The layout of `data`, the bytes `response` was parsed from; None for an error response, a
  tensor of strings, or bytes that are not the plain encoding of `response`."""
  if response.status_code or response.status_error_message:
    return None
  return _learn(data, b'', wire.response_tensor_header, response.tensor)


def _learn(data: bytes, prefix: bytes, tensor_header, tensors) -> Optional[MessageLayout]:
  """The layout of `data` if it is `prefix` then one plain field per numeric tensor."""
  headers = [(0, prefix)] if prefix else []
  spans = []
  arrays = []
  offset = len(prefix)
  for tensor in tensors:
    dtype = codec.WIRE_DTYPE_BY_CODE.get(tensor.dtype)
    shape = tuple(tensor.shape)
    if dtype is None or tensor.string_val or any(d < 0 for d in shape):
      return None
    content = tensor.content
    if len(content) != dtype.itemsize * math.prod(shape):
      return None  # Contents of the wrong size: the decoder's error, not a view.
    header = tensor_header(tensor.dtype, shape, len(content))
    headers.append((offset, header))
    offset += len(header)
    spans.append((offset, offset + len(content)))
    arrays.append((dtype, shape))
    offset += len(content)
  layout = MessageLayout(offset, headers, spans, arrays)
  if not layout.matches(data) or any(data[start:end] != tensor.content
                                     for (start, end), tensor in zip(spans, tensors)):
    return None
  return layout
