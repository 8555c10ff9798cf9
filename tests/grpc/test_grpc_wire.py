"""seed_rl.grpc.wire: the directly written CallRequest/CallResponse bytes are exactly upb's."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire
from tests.grpc import reference_encoding

DTYPES = [np.dtype(d) for d in (np.float32, np.float64, np.int32, np.uint8, np.int16, np.int8,
                                np.complex64, np.int64, np.bool_, np.uint16, np.complex128,
                                np.float16, np.uint32, np.uint64)]
if codec.add_bfloat16():
  DTYPES.append(codec.DTYPE_BY_CODE[service_pb2.DT_BFLOAT16])


def _reference_request(function, leaves) -> bytes:
  return reference_encoding.call_request(function, leaves).SerializeToString()


def _reference_response(arrays, codes) -> bytes:
  response = service_pb2.CallResponse()
  for arr, code in zip(arrays, codes):
    reference_encoding.add_array(response.tensor, arr, code)
  return response.SerializeToString()


@st.composite
def _arrays(draw):
  dtype = draw(st.sampled_from(DTYPES))
  shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
  data = draw(st.binary(min_size=int(np.prod(shape)) * dtype.itemsize,
                        max_size=int(np.prod(shape)) * dtype.itemsize))
  arr = np.frombuffer(data, dtype).reshape(shape).copy()
  if dtype == np.bool_:
    arr = arr.view(np.uint8) % 2 == 1  # Only 0 and 1 are valid bool bytes.
  layout = draw(st.sampled_from(['c', 'transposed', 'strided', 'big_endian']))
  if layout == 'transposed' and arr.ndim >= 2:
    arr = arr.T
  elif layout == 'strided' and arr.ndim >= 1:
    arr = arr[::2]
  elif layout == 'big_endian' and dtype.itemsize > 1 and dtype.kind in 'iufc':
    arr = arr.astype(dtype.newbyteorder('>'))
  return arr


def _leaves():
  return st.one_of(
      _arrays(), st.integers(-2**40, 2**40), st.floats(allow_nan=False, width=32),
      st.booleans(), st.complex_numbers(allow_nan=False, allow_infinity=False),
      st.text(max_size=4), st.binary(max_size=4),
      st.lists(st.text(max_size=2), max_size=3).map(lambda x: np.array(x, dtype=object)))


@pytest.mark.timeout(120)
@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.text(max_size=8), st.lists(_leaves(), max_size=6))
def test_request_bytes_equal_upb_serialization(function, leaves):
  assert wire.encode_call_request(function, leaves) == _reference_request(function, leaves)


@pytest.mark.timeout(120)
@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.lists(_arrays(), max_size=5))
def test_response_bytes_equal_upb_serialization(arrays):
  codes = [codec.wire_code(a) for a in arrays]
  assert wire.encode_call_response(arrays, codes) == _reference_response(arrays, codes)


@pytest.mark.timeout(120)
@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.data())
def test_row_slices_equal_upb_serialization(data):
  batch = data.draw(st.integers(1, 6))
  outputs = []
  for _ in range(data.draw(st.integers(1, 3))):
    arr = data.draw(_arrays())
    outputs.append(np.resize(arr, (batch,) + arr.shape[1:]) if arr.ndim else np.resize(arr, batch))
  strings = data.draw(st.booleans())
  if strings:
    outputs.append(np.array([b'r%d' % i for i in range(batch)], dtype=object))
  codes = [codec.wire_code(codec.to_array(o)) for o in outputs]
  start = data.draw(st.integers(0, batch - 1))
  rows = data.draw(st.integers(1, batch - start))
  single = data.draw(st.booleans()) and rows == 1
  parts = []
  for out, code in zip(outputs, codes):
    wire.RowSlicer(out, code).add(parts, start, rows, single)
  expected = [o[start] if single else o[start:start + rows] for o in outputs]
  expected = [np.asarray(e, dtype=object) if code == codec.DT_STRING else np.asarray(e)
              for e, code in zip(expected, codes)]
  assert b''.join(parts) == _reference_response(expected, codes)


@pytest.mark.timeout(30)
@pytest.mark.parametrize('value', [0, 1, 127, 128, 300, 2**31, 2**63 - 1, -1, -2**63])
def test_varint_matches_protobuf(value):
  encoded = service_pb2.Tensor(shape=[value]).SerializeToString()
  assert encoded == b'\x12' + wire.varint(len(wire.varint(value))) + wire.varint(value)


@pytest.mark.timeout(30)
def test_request_error_names_the_argument():
  with pytest.raises(codec.CodecError, match=r'arg\[1\]: None cannot be sent'):
    wire.encode_call_request('f', [np.zeros(2), None])


@pytest.mark.timeout(30)
def test_header_cache_is_bounded(monkeypatch):
  monkeypatch.setattr(wire, '_MAX_CACHED_HEADERS', 3)
  monkeypatch.setattr(wire, '_headers', {})  # Earlier tests' headers must not count.
  monkeypatch.setattr(wire, '_array_headers', {})
  for n in range(10):
    leaves = [np.arange(n, dtype=np.int32)]
    assert wire.encode_call_request('f', leaves) == _reference_request('f', leaves)
    assert len(wire._headers) <= 3  # pylint: disable=protected-access
    assert len(wire._array_headers) <= 3  # pylint: disable=protected-access


@pytest.mark.timeout(30)
def test_a_remembered_header_serves_only_arrays_it_fits():
  # The second request of a (dtype, shape) takes its header from the cache; arrays of that
  # dtype and shape whose buffer is not their content (strided, transposed) must not.
  base = np.arange(12, dtype=np.int32).reshape(3, 4)
  for leaves in ([base], [base + 1], [base.T.copy().T], [np.arange(24, dtype=np.int32)[::2]
                                                          .reshape(3, 4)],
                 [base.astype('>i4')], [base.astype(np.float32)], [base[:, :2]]):
    assert wire.encode_call_request('f', leaves) == _reference_request('f', leaves)


@pytest.mark.timeout(30)
def test_request_does_not_alias_the_arrays():
  arr = np.arange(4, dtype=np.int32)
  data = wire.encode_call_request('f', [arr])
  arr[:] = 0
  request = service_pb2.CallRequest.FromString(data)
  np.testing.assert_array_equal(codec.decode_tensor(request.tensor[0]), [0, 1, 2, 3])
