"""seed_rl.grpc.request_layout: reading a request laid out like a learnt one without parsing."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from seed_rl.grpc import request_layout
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire


def _learn(data: bytes):
  return request_layout.learn(data, service_pb2.CallRequest.FromString(data))


def _arrays(seed: int):
  rng = np.random.default_rng(seed)
  return [rng.integers(0, 100, 3).astype(np.int32), rng.random((2, 2)).astype(np.float32),
          rng.integers(0, 255, (4, 4, 1)).astype(np.uint8), np.zeros(0, np.int64)]


@pytest.mark.timeout(30)
def test_contents_of_a_request_laid_out_like_the_learnt_one():
  layout = _learn(wire.encode_call_request('inference', _arrays(0)))
  assert layout is not None
  arrays = _arrays(1)
  contents = layout.contents(wire.encode_call_request('inference', arrays))
  assert [bytes(c) for c in contents] == [a.tobytes() for a in arrays]


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
  assert layout.contents(wire.encode_call_request(function, arrays)) is None


@pytest.mark.timeout(30)
def test_strings_are_not_learnt():
  data = wire.encode_call_request('f', [np.zeros(2, np.int32), b'text'])
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


@pytest.mark.timeout(60)
@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(st.lists(st.tuples(st.sampled_from(['int32', 'float64', 'uint8', 'bool']),
                                     st.lists(st.integers(0, 3), max_size=3)), max_size=5),
                  st.integers(0, 2**31))
def test_any_numeric_request_is_read_back(specs, seed):
  rng = np.random.default_rng(seed)

  def arrays():
    return [(rng.random(shape) * 100).astype(dtype) for dtype, shape in specs]
  layout = _learn(wire.encode_call_request('f', arrays()))
  values = arrays()
  data = wire.encode_call_request('f', values)
  assert [bytes(c) for c in layout.contents(data)] == [a.tobytes() for a in values]
