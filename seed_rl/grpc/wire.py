"""Direct protobuf encoding of the two per-step messages, CallRequest and CallResponse (numpy only).

Every actor step encodes one CallRequest and the learner one CallResponse per caller. Building
them as upb messages copies each array three times (`tobytes`, into the message, into the
serialized string) and costs Python work per tensor. Here the bytes are written
directly: a cached header per (field, dtype, shape) followed by the array's own buffer, joined
once. The output is byte for byte what `SerializeToString` of the same message gives (tested);
values the direct path does not cover (strings, Python scalars, non-native byte order, other
buffer layouts) go through the message classes of `codec`.

Wire format facts used (protobuf encoding, proto3): a field is `varint(number << 3 | wire type)`
then its value; length-delimited values (type 2: strings, bytes, messages, packed repeated
scalars) are prefixed with their varint length; fields with default values (0, empty) are
omitted; repeated int64 fields are packed.
"""

import sys
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2

# Field tags (number << 3 | 2 for length-delimited) of service.proto.
_REQUEST_FUNCTION = b'\x0a'  # CallRequest.function = 1
_REQUEST_TENSOR = b'\x12'  # CallRequest.tensor = 2
_RESPONSE_TENSOR = b'\x0a'  # CallResponse.tensor = 1
_TENSOR_DTYPE = b'\x08'  # Tensor.dtype = 1 (varint)
_TENSOR_SHAPE = b'\x12'  # Tensor.shape = 2 (packed)
_TENSOR_CONTENT = b'\x1a'  # Tensor.content = 3

_MAX_CACHED_HEADERS = 4096


def _remember(cache: Dict[Any, bytes], key: Any, value: bytes) -> bytes:
  """Stores `value` in one of the caches of header bytes and returns it. A full cache is
  emptied first: shapes that change every call are not worth remembering."""
  if len(cache) >= _MAX_CACHED_HEADERS:
    cache.clear()
  cache[key] = value
  return value


def varint(value: int) -> bytes:
  """The protobuf base-128 varint of an int64/uint64 (negative numbers as 10 bytes)."""
  value &= 0xFFFFFFFFFFFFFFFF
  out = bytearray()
  while value > 0x7F:
    out.append((value & 0x7F) | 0x80)
    value >>= 7
  out.append(value)
  return bytes(out)


def _exports_flat_buffer(dtype: np.dtype) -> bool:
  try:
    memoryview(np.zeros(2, dtype))
  except (TypeError, ValueError, BufferError):
    return False
  return True


# Native little-endian dtypes whose arrays can be joined as they are (ml_dtypes' bfloat16, for
# one, exports no buffer).
_DIRECT_CODES: Dict[np.dtype, int] = {
    dtype: code for dtype, code in codec.CODE_BY_DTYPE.items()
    if sys.byteorder == 'little' and _exports_flat_buffer(dtype)}

_headers: Dict[Tuple[bytes, int, Tuple[int, ...], int], bytes] = {}


def _header(tag: bytes, code: int, shape: Tuple[int, ...], nbytes: int) -> bytes:
  """Everything of a `Tensor` field but its `nbytes` bytes of content (cached)."""
  key = (tag, code, shape, nbytes)
  header = _headers.get(key)
  if header is None:
    body = _TENSOR_DTYPE + varint(code)
    if shape:
      packed = b''.join([varint(d) for d in shape])
      body += _TENSOR_SHAPE + varint(len(packed)) + packed
    if nbytes:
      body += _TENSOR_CONTENT + varint(nbytes)
    header = _remember(_headers, key, tag + varint(len(body) + nbytes) + body)
  return header


def _message_field(tag: bytes, tensor: service_pb2.Tensor) -> bytes:
  data = tensor.SerializeToString()
  return tag + varint(len(data)) + data


def _is_direct(arr: np.ndarray, code: int) -> bool:
  """True if `arr`'s own buffer is its wire content for dtype `code`."""
  return arr.flags.c_contiguous and _DIRECT_CODES.get(arr.dtype) == code


def _add_array(parts: List[Any], tag: bytes, arr: np.ndarray, code: int) -> None:
  """Appends one `Tensor` field holding the whole of `arr` (an array from `codec.to_array`)."""
  if _is_direct(arr, code):
    parts.append(_header(tag, code, arr.shape, arr.nbytes))
    if arr.nbytes:
      parts.append(arr)
  else:
    parts.append(_message_field(tag, codec.encode_array(arr, code)))


_function_fields: Dict[str, bytes] = {}


def request_function_field(function: str) -> bytes:
  """The bytes a serialized `CallRequest` of `function` starts with (none for ''; cached)."""
  field = _function_fields.get(function)
  if field is None:
    name = function.encode('utf-8')
    field = _remember(_function_fields, function,
                      _REQUEST_FUNCTION + varint(len(name)) + name if name else b'')
  return field


def request_tensor_header(code: int, shape: Tuple[int, ...], nbytes: int) -> bytes:
  """The bytes of a `CallRequest.tensor` field before its `nbytes` bytes of content."""
  return _header(_REQUEST_TENSOR, code, shape, nbytes)


def response_tensor_header(code: int, shape: Tuple[int, ...], nbytes: int) -> bytes:
  """The bytes of a `CallResponse.tensor` field before its `nbytes` bytes of content."""
  return _header(_RESPONSE_TENSOR, code, shape, nbytes)


# The request header of every (dtype, shape) of non-empty arrays sent as they are: an actor
# sends the same few every step, and finding the header costs less than working it out.
_array_headers: Dict[Tuple[np.dtype, Tuple[int, ...]], bytes] = {}


def encode_call_request(function: str, leaves: Sequence[Any]) -> bytes:
  """Serialized `CallRequest(function, tensor=[one Tensor per leaf])`.

  Leaves are what `codec.flatten` returns (arrays, numpy and Python scalars, strings).
  Raises:
    codec.CodecError: a leaf cannot be sent; the message names it as arg[i].
  """
  # An actor's every step: arrays of dtypes and shapes sent before, joined as they are. Each
  # µs of Python here costs several between two RPCs, so this loop does the least it can.
  parts: List[Any] = [request_function_field(function)]
  for leaf in leaves:
    header = _array_headers.get((leaf.dtype, leaf.shape)) if type(leaf) is np.ndarray else None
    if header is None:
      return _encode_any_call_request(function, leaves)
    parts.append(header)
    parts.append(leaf)
  try:
    return b''.join(parts)
  except TypeError:  # An array that is not C-contiguous exports no plain buffer.
    return _encode_any_call_request(function, leaves)


def _encode_any_call_request(function: str, leaves: Sequence[Any]) -> bytes:
  """`encode_call_request` for any leaves; remembers the headers of arrays sent as they are."""
  prefix = request_function_field(function)
  parts: List[Any] = [prefix] if prefix else []
  for i, leaf in enumerate(leaves):
    try:
      arr = codec.to_array(leaf)
      code = codec.wire_code(arr)
    except codec.CodecError as e:
      raise codec.CodecError(f'arg[{i}]: {e}') from None
    _add_array(parts, _REQUEST_TENSOR, arr, code)
    if arr is leaf and arr.nbytes and _is_direct(arr, code):
      _remember(_array_headers, (arr.dtype, arr.shape), parts[-2])
  return b''.join(parts)


def encode_call_response(arrays: Sequence[np.ndarray], codes: Sequence[int]) -> bytes:
  """Serialized successful `CallResponse` holding `arrays`, sent with the wire dtypes `codes`."""
  parts: List[Any] = []
  for arr, code in zip(arrays, codes):
    _add_array(parts, _RESPONSE_TENSOR, np.asarray(arr), code)
  return b''.join(parts)


class RowSlicer:
  """Writes the rows [start, start + rows) of one batched output as a `CallResponse` field.

  Made once per output of a batch; `add` is called per caller. A caller that sent one element
  without the batch dimension (`single`) gets row `start` without it.
  """

  __slots__ = ('_arr', '_code', '_row_shape', '_row_bytes', '_buffer')

  def __init__(self, arr: np.ndarray, code: int):
    self._arr = arr
    self._code = code
    self._row_shape = arr.shape[1:]
    self._buffer = memoryview(arr).cast('B') if _is_direct(arr, code) and arr.nbytes else None
    self._row_bytes = arr.nbytes // arr.shape[0] if arr.shape[0] else 0

  def add(self, parts: List[Any], start: int, rows: int, single: bool) -> None:
    if self._buffer is None:
      part = self._arr[start] if single else self._arr[start:start + rows]
      _add_array(parts, _RESPONSE_TENSOR, np.asarray(part), self._code)
      return
    shape = self._row_shape if single else (rows,) + self._row_shape
    nbytes = rows * self._row_bytes
    parts.append(_header(_RESPONSE_TENSOR, self._code, shape, nbytes))
    if nbytes:
      parts.append(self._buffer[start * self._row_bytes:start * self._row_bytes + nbytes])
