"""Encoding of nests of arrays to and from the wire messages of service.proto (numpy only).

Three jobs, shared by the client (which must not import TensorFlow) and the server:
- `flatten`: flattens a nest exactly like `tf.nest.flatten` (dict keys sorted, namedtuple fields
  in declaration order, None and strings are leaves), so the server can pack the flat list into
  the bound function's `input_signature`.
- `to_array` / `encode_array` / `decode_tensor`: one leaf <-> one `Tensor` message (dtype, shape,
  little-endian C-order bytes; strings as a list of bytes). Python scalars are converted the way
  `tf.convert_to_tensor` converts them (int -> int32 when it fits, float -> float32), so a client
  call means the same as it did with the original TF client.
- `structure_to_proto` / `make_packer`: describe a nest of output specs as a `Structure` message and
  rebuild the nest from a flat list on the other side (namedtuples recreated by name and fields).
"""

import collections
import collections.abc
import math
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from seed_rl.grpc import service_pb2

_LITTLE_ENDIAN = sys.byteorder == 'little'


class CodecError(ValueError):
  """A value cannot be encoded or a message cannot be decoded; the message says why."""


# --- dtypes -------------------------------------------------------------------------------------

DT_STRING = service_pb2.DT_STRING

# (wire code, numpy dtype, TensorFlow name used in error messages)
_NUMERIC = [
    (service_pb2.DT_FLOAT, np.dtype(np.float32), 'float'),
    (service_pb2.DT_DOUBLE, np.dtype(np.float64), 'double'),
    (service_pb2.DT_INT32, np.dtype(np.int32), 'int32'),
    (service_pb2.DT_UINT8, np.dtype(np.uint8), 'uint8'),
    (service_pb2.DT_INT16, np.dtype(np.int16), 'int16'),
    (service_pb2.DT_INT8, np.dtype(np.int8), 'int8'),
    (service_pb2.DT_COMPLEX64, np.dtype(np.complex64), 'complex64'),
    (service_pb2.DT_INT64, np.dtype(np.int64), 'int64'),
    (service_pb2.DT_BOOL, np.dtype(np.bool_), 'bool'),
    (service_pb2.DT_UINT16, np.dtype(np.uint16), 'uint16'),
    (service_pb2.DT_COMPLEX128, np.dtype(np.complex128), 'complex128'),
    (service_pb2.DT_HALF, np.dtype(np.float16), 'half'),
    (service_pb2.DT_UINT32, np.dtype(np.uint32), 'uint32'),
    (service_pb2.DT_UINT64, np.dtype(np.uint64), 'uint64'),
]
#: numpy dtype (native byte order) -> wire code.
CODE_BY_DTYPE: Dict[np.dtype, int] = {dt: code for code, dt, _ in _NUMERIC}
#: wire code -> numpy dtype with explicit little-endian byte order (what the bytes are in).
WIRE_DTYPE_BY_CODE: Dict[int, np.dtype] = {
    code: dt.newbyteorder('<') if dt.itemsize > 1 else dt for code, dt, _ in _NUMERIC}
#: wire code -> numpy dtype in native order (object for strings).
DTYPE_BY_CODE: Dict[int, np.dtype] = {code: dt for code, dt, _ in _NUMERIC}
DTYPE_BY_CODE[DT_STRING] = np.dtype(object)
#: wire code -> TensorFlow dtype name ('float', 'int32', 'string', ...).
NAME_BY_CODE: Dict[int, str] = {code: name for code, _, name in _NUMERIC}
NAME_BY_CODE[DT_STRING] = 'string'
NAME_BY_CODE[service_pb2.DT_BFLOAT16] = 'bfloat16'
_ALL_NAMES = {code: name for name, code in service_pb2.DataType.items()}


def add_bfloat16(import_if_missing: bool = True) -> bool:
  """Adds bfloat16 (numpy's from `ml_dtypes`) to the dtype tables; whether it is there now.

  Importing ml_dtypes costs start-up time and memory, so a TensorFlow-free actor does it only when
  it meets a bfloat16 value: this module adds it when it is first asked to encode or decode one,
  or at import when ml_dtypes is already loaded (as it is with TensorFlow); the server's binding
  adds it for the functions it binds. With `import_if_missing=False` it is added only if
  ml_dtypes is already loaded.
  """
  if service_pb2.DT_BFLOAT16 in DTYPE_BY_CODE:
    return True
  if not import_if_missing and 'ml_dtypes' not in sys.modules:
    return False
  try:
    import ml_dtypes  # pylint: disable=g-import-not-at-top
  except ImportError:
    return False
  dtype = np.dtype(ml_dtypes.bfloat16)
  WIRE_DTYPE_BY_CODE[service_pb2.DT_BFLOAT16] = dtype.newbyteorder('<')
  DTYPE_BY_CODE[service_pb2.DT_BFLOAT16] = dtype
  CODE_BY_DTYPE[dtype] = service_pb2.DT_BFLOAT16
  return True


add_bfloat16(import_if_missing=False)


def dtype_name(code: int) -> str:
  """TensorFlow-style name of a wire dtype code (for error messages)."""
  if code in NAME_BY_CODE:
    return NAME_BY_CODE[code]
  return _ALL_NAMES.get(code, f'<unknown dtype {code}>')


def format_shape(shape: Sequence[int]) -> str:
  """Formats a shape as TensorFlow's C++ does in messages: [3,4], [] for a scalar, ? if unknown."""
  return '[' + ','.join('?' if d is None or d < 0 else str(d) for d in shape) + ']'


# --- flattening (tf.nest order) ---------------------------------------------------------------

def is_namedtuple(value: Any) -> bool:
  """True for instances of collections.namedtuple / typing.NamedTuple classes."""
  return isinstance(value, tuple) and isinstance(getattr(type(value), '_fields', None), tuple)


def sorted_keys(mapping: collections.abc.Mapping) -> List[Any]:
  try:
    return sorted(mapping)
  except TypeError as e:
    raise CodecError(f'Only dicts with sortable keys can be sent (keys {list(mapping)!r}).') from e


def flatten(nest: Any) -> List[Any]:
  """Flattens `nest` in `tf.nest.flatten` order: leaves are everything except lists, tuples
  (namedtuples included), mappings (values in sorted key order), other `collections.abc.Sequence`s
  that are not str/bytes, and attrs classes. None is a leaf, as in tf.nest."""
  out: List[Any] = []
  _flatten_into(nest, out)
  return out


def _flatten_into(value: Any, out: List[Any]) -> None:
  kind = type(value)
  if kind is np.ndarray:
    out.append(value)
  elif kind is list or kind is tuple or (isinstance(value, (list, tuple))):
    for item in value:
      if type(item) is np.ndarray:  # Most leaves: no call for them.
        out.append(item)
      else:
        _flatten_into(item, out)
  elif isinstance(value, collections.abc.Mapping):
    for key in sorted_keys(value):
      _flatten_into(value[key], out)
  elif hasattr(kind, '__attrs_attrs__'):
    for field in kind.__attrs_attrs__:
      _flatten_into(getattr(value, field.name), out)
  elif (isinstance(value, collections.abc.Sequence) and
        not isinstance(value, (str, bytes))):
    for item in value:
      _flatten_into(item, out)
  else:
    out.append(value)


# --- leaves -------------------------------------------------------------------------------------

_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


def to_array(value: Any) -> np.ndarray:
  """Converts one leaf to a numpy array with `tf.convert_to_tensor`'s dtype rules for Python
  scalars (bool, int -> int32 or int64, float -> float32, complex -> complex128, str/bytes ->
  string). Strings come out as an object array of bytes. Raises CodecError if impossible."""
  kind = type(value)
  if kind is np.ndarray:
    arr = value
  elif kind is bool:
    return np.array(value, np.bool_)
  elif kind is int:
    if _INT32_MIN <= value <= _INT32_MAX:
      return np.array(value, np.int32)
    if _INT64_MIN <= value <= _INT64_MAX:
      return np.array(value, np.int64)
    raise CodecError(f'Python int {value} does not fit in int64.')
  elif kind is float:
    return np.array(value, np.float32)
  elif kind is complex:
    return np.array(value, np.complex128)
  elif isinstance(value, (str, bytes)):
    arr = np.empty((), dtype=object)
    arr[()] = value.encode('utf-8') if isinstance(value, str) else value
    return arr
  elif value is None:
    raise CodecError('None cannot be sent as a tensor.')
  else:
    try:
      arr = np.asarray(value)
    except Exception as e:  # pylint: disable=broad-except
      raise CodecError(f'Cannot convert {kind.__name__} to an array: {e}') from e
  if arr.dtype.kind in 'USO':
    return _to_string_array(arr)
  return arr


def _to_string_array(arr: np.ndarray) -> np.ndarray:
  flat = arr.ravel().tolist()
  for i, item in enumerate(flat):
    if isinstance(item, str):
      flat[i] = item.encode('utf-8')
    elif not isinstance(item, bytes):
      raise CodecError(
          f'Arrays of {type(item).__name__} cannot be sent (only numbers, bool and strings).')
  out = np.empty(len(flat), dtype=object)
  out[:] = flat
  return out.reshape(arr.shape)


def wire_code(arr: np.ndarray) -> int:
  """The wire dtype code of an array returned by `to_array`."""
  dtype = arr.dtype
  code = CODE_BY_DTYPE.get(dtype)
  if code is not None:
    return code
  if dtype.kind == 'O':
    return DT_STRING
  if dtype.name == 'bfloat16' and add_bfloat16() and dtype in CODE_BY_DTYPE:
    return CODE_BY_DTYPE[dtype]
  if dtype.byteorder in '<>' and dtype.newbyteorder('=') in CODE_BY_DTYPE:
    return CODE_BY_DTYPE[dtype.newbyteorder('=')]
  raise CodecError(f'dtype {dtype} cannot be sent.')


def array_bytes(arr: np.ndarray) -> bytes:
  """Little-endian C-order bytes of a numeric array."""
  if arr.dtype.byteorder == '>' or (not _LITTLE_ENDIAN and arr.dtype.byteorder == '='):
    arr = arr.astype(arr.dtype.newbyteorder('<'))
  return arr.tobytes()


def encode_array(arr: np.ndarray, code: Optional[int] = None) -> service_pb2.Tensor:
  """Builds the `Tensor` message of an array returned by `to_array`."""
  if code is None:
    code = wire_code(arr)
  if code == DT_STRING:
    return service_pb2.Tensor(dtype=code, shape=arr.shape, string_val=arr.ravel().tolist())
  return service_pb2.Tensor(dtype=code, shape=arr.shape, content=array_bytes(arr))


def decode_tensor(tensor: service_pb2.Tensor) -> np.ndarray:
  """Decodes a `Tensor` message. Numeric arrays are read-only views of the message's bytes (no
  copy); strings come back as an object array of bytes. Raises CodecError if the message is not
  consistent (unknown dtype, negative dimension, wrong number of bytes)."""
  code = tensor.dtype
  shape = tuple(tensor.shape)
  for d in shape:
    if d < 0:
      raise CodecError(f'Cannot parse tensor: negative dimension in shape {format_shape(shape)}.')
  size = math.prod(shape)
  if code == DT_STRING:
    values = tensor.string_val
    if len(values) != size:
      raise CodecError(f'Cannot parse tensor: shape {format_shape(shape)} needs {size} strings '
                       f'but {len(values)} were sent.')
    out = np.empty(size, dtype=object)
    out[:] = list(values)
    return out.reshape(shape)
  dtype = WIRE_DTYPE_BY_CODE.get(code)
  if dtype is None and code == service_pb2.DT_BFLOAT16 and add_bfloat16():
    dtype = WIRE_DTYPE_BY_CODE[code]
  if dtype is None:
    raise CodecError(f'Cannot parse tensor: unsupported dtype {dtype_name(code)}.')
  content = tensor.content
  if len(content) != size * dtype.itemsize:
    raise CodecError(
        f'Cannot parse tensor: shape {format_shape(shape)} of {dtype_name(code)} needs '
        f'{size * dtype.itemsize} bytes but {len(content)} were sent.')
  return np.frombuffer(content, dtype).reshape(shape)


# --- structures ---------------------------------------------------------------------------------

def structure_to_proto(nest: Any, leaf_to_spec: Callable[[Any], service_pb2.TensorSpec]
                      ) -> service_pb2.Structure:
  """Describes a nest as a `Structure`; `leaf_to_spec` turns each non-None leaf into a TensorSpec.

  Dict keys must be strings. None becomes `none` (it stands for no tensor).
  """
  if nest is None:
    return service_pb2.Structure(none=service_pb2.NoneValue())
  if is_namedtuple(nest):
    return service_pb2.Structure(named_tuple=service_pb2.NamedTuple(
        name=type(nest).__name__, fields=list(type(nest)._fields),
        values=[structure_to_proto(v, leaf_to_spec) for v in nest]))
  if isinstance(nest, tuple):
    return service_pb2.Structure(tuple=service_pb2.Sequence(
        values=[structure_to_proto(v, leaf_to_spec) for v in nest]))
  if isinstance(nest, list):
    return service_pb2.Structure(list=service_pb2.Sequence(
        values=[structure_to_proto(v, leaf_to_spec) for v in nest]))
  if isinstance(nest, collections.abc.Mapping):
    keys = sorted_keys(nest)
    for key in keys:
      if not isinstance(key, str):
        raise CodecError(f'Output dict keys must be strings, got {key!r}.')
    return service_pb2.Structure(dict=service_pb2.Dict(
        keys=keys, values=[structure_to_proto(nest[k], leaf_to_spec) for k in keys]))
  return service_pb2.Structure(tensor=leaf_to_spec(nest))


def count_leaves(structure: service_pb2.Structure) -> int:
  """Number of tensors a `Structure` holds."""
  kind = structure.WhichOneof('kind')
  if kind == 'tensor':
    return 1
  if kind in ('none', None):
    return 0
  return sum(count_leaves(v) for v in getattr(structure, kind).values)


_NAMEDTUPLE_CLASSES: Dict[Tuple[str, Tuple[str, ...]], type] = {}


def namedtuple_class(name: str, fields: Sequence[str]) -> type:
  """The (cached) namedtuple class with this name and these fields."""
  key = (name, tuple(fields))
  cls = _NAMEDTUPLE_CLASSES.get(key)
  if cls is None:
    type_name = name if name.isidentifier() else 'NamedTuple'
    cls = collections.namedtuple(type_name, key[1], rename=True)
    _NAMEDTUPLE_CLASSES[key] = cls
  return cls


def make_packer(structure: service_pb2.Structure) -> Callable[[Iterator[Any]], Any]:
  """Returns `pack(leaves_iterator) -> nest` that rebuilds the nest described by `structure`."""
  kind = structure.WhichOneof('kind')
  if kind == 'tensor':
    return next
  if kind in ('none', None):
    return lambda _: None
  children = [make_packer(v) for v in getattr(structure, kind).values]
  if kind == 'list':
    return lambda it: [child(it) for child in children]
  if kind == 'tuple':
    return lambda it: tuple(child(it) for child in children)
  if kind == 'dict':
    keys = list(structure.dict.keys)
    return lambda it: {k: child(it) for k, child in zip(keys, children)}
  cls = namedtuple_class(structure.named_tuple.name, structure.named_tuple.fields)
  return lambda it: cls(*[child(it) for child in children])
