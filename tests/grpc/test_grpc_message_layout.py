"""seed_rl.grpc.message_layout: reading a message laid out like a learnt one without parsing."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from seed_rl.grpc import codec
from seed_rl.grpc import message_layout
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire


def _learn(data: bytes):
  return message_layout.learn_request(data, service_pb2.CallRequest.FromString(data))


def _learn_response(data: bytes):
  return message_layout.learn_response(data, service_pb2.CallResponse.FromString(data))


def _response(arrays) -> bytes:
  return wire.encode_call_response(arrays, [codec.wire_code(a) for a in arrays])


def _arrays(seed: int):
  rng = np.random.default_rng(seed)
  return [rng.integers(0, 100, 3).astype(np.int32), rng.random((2, 2)).astype(np.float32),
          rng.integers(0, 255, (4, 4, 1)).astype(np.uint8), np.zeros(0, np.int64)]


def _assert_same(actual, expected):
  assert len(actual) == len(expected)
  for a, e in zip(actual, expected):
    assert a.dtype == e.dtype and a.shape == e.shape and not a.flags.writeable
    np.testing.assert_array_equal(a, e)


@pytest.mark.timeout(30)
def test_arrays_of_a_request_laid_out_like_the_learnt_one():
  layout = _learn(wire.encode_call_request('inference', _arrays(0)))
  assert layout is not None
  arrays = _arrays(1)
  data = wire.encode_call_request('inference', arrays)
  assert layout.matches(data)
  _assert_same(layout.arrays(data), arrays)
  assert [bytes(data[start:end]) for start, end in layout.spans] == [a.tobytes() for a in arrays]


@pytest.mark.timeout(30)
@pytest.mark.parametrize('function, arrays', [
    ('g', _arrays(1)),  # another function of the same length
    ('f', [a.reshape(-1) if a.ndim > 1 else a for a in _arrays(1)]),  # other shapes
    ('f', [a.view(np.float32) if a.dtype == np.int32 else a for a in _arrays(1)]),  # dtypes
    ('f', _arrays(1)[:3]),  # fewer tensors
    ('f', _arrays(1) + [np.zeros(1, np.int8)]),  # more
])
def test_other_requests_are_not_read(function, arrays):
  layout = _learn(wire.encode_call_request('f', _arrays(0)))
  assert not layout.matches(wire.encode_call_request(function, arrays))


@pytest.mark.timeout(30)
def test_strings_are_not_learnt():
  data = wire.encode_call_request('f', [np.zeros(2, np.int32), b'text'])
  assert _learn(data) is None
  assert _learn_response(_response([np.zeros(2, np.int32), np.array([b'text'], object)])) is None


@pytest.mark.timeout(30)
def test_contents_of_the_wrong_size_are_not_learnt():
  tensor = service_pb2.Tensor(dtype=service_pb2.DT_INT32, shape=[2], content=b'\0' * 4)
  data = service_pb2.CallRequest(function='f', tensor=[tensor]).SerializeToString()
  assert _learn(data) is None


@pytest.mark.timeout(30)
def test_other_encodings_of_the_same_request_are_not_learnt():
  data = wire.encode_call_request('f', _arrays(0))
  function_field = wire.request_function_field('f')
  reordered = data[len(function_field):] + function_field  # Parses to the same message.
  unknown_field = data + b'\x78\x01'  # Field 15, a varint: kept as an unknown field.
  request = service_pb2.CallRequest.FromString(data)
  for other in (reordered, unknown_field):
    parsed = service_pb2.CallRequest.FromString(other)
    assert (parsed.function, list(parsed.tensor)) == (request.function, list(request.tensor))
    assert _learn(other) is None


@pytest.mark.timeout(30)
def test_a_response_laid_out_like_the_learnt_one_is_read_and_others_are_not():
  layout = _learn_response(_response(_arrays(0)))
  assert layout is not None
  arrays = _arrays(1)
  _assert_same(layout.arrays(_response(arrays)), arrays)
  assert not layout.matches(_response(arrays[:3]))
  assert not layout.matches(_response([a.reshape(-1) for a in arrays]))


@pytest.mark.timeout(30)
def test_error_responses_are_not_learnt_nor_read():
  error = service_pb2.CallResponse(status_code=3, status_error_message='bad').SerializeToString()
  assert _learn_response(error) is None
  # An error status of the same length as a learnt response is a field of its own: the header
  # bytes differ, so it is never read as tensors.
  layout = _learn_response(_response([np.zeros(4, np.uint8)]))
  same_length = service_pb2.CallResponse(status_code=3, status_error_message='x' * (
      layout.size - 4)).SerializeToString()
  assert len(same_length) == layout.size and not layout.matches(same_length)


@pytest.mark.timeout(60)
@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(st.lists(st.tuples(st.sampled_from(['int32', 'float64', 'uint8', 'bool']),
                                     st.lists(st.integers(0, 3), max_size=3)), max_size=5),
                  st.integers(0, 2**31), st.booleans())
def test_any_numeric_message_is_read_back(specs, seed, response):
  rng = np.random.default_rng(seed)

  def arrays():
    return [(rng.random(shape) * 100).astype(dtype) for dtype, shape in specs]
  if response:
    encode, learn = _response, _learn_response
  else:
    encode, learn = (lambda values: wire.encode_call_request('f', values)), _learn
  layout = learn(encode(arrays()))
  values = arrays()
  data = encode(values)
  assert layout.matches(data)
  _assert_same(layout.arrays(data), values)
