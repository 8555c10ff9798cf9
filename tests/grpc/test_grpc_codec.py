"""seed_rl.grpc.codec: tf.nest order, leaf encoding for every dtype, structures."""

import collections
import typing

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2
from tests.grpc import reference_encoding

Point = collections.namedtuple('Point', 'y x')


class Typed(typing.NamedTuple):
  b: typing.Any
  a: typing.Any


def _leaves():
  return st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.booleans(),
                   st.text(max_size=3), st.none())


def _nests():
  return st.recursive(
      _leaves(),
      lambda children: st.one_of(
          st.lists(children, max_size=3),
          st.lists(children, max_size=3).map(tuple),
          st.dictionaries(st.sampled_from(['b', 'a', 'c', 'zz']), children, max_size=3),
          st.tuples(children, children).map(lambda t: Point(*t)),
          st.tuples(children, children).map(lambda t: Typed(*t))),
      max_leaves=10)


@pytest.mark.timeout(120)
@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(_nests())
def test_flatten_matches_tf_nest(nest):
  ours = codec.flatten(nest)
  theirs = tf.nest.flatten(nest)
  assert len(ours) == len(theirs)
  for a, b in zip(ours, theirs):
    assert a is b


@pytest.mark.timeout(30)
def test_flatten_order_examples():
  nest = [{'b': 1, 'a': (2, Point(y=3, x=4))}, None, 'str', b'bytes', np.arange(2)]
  flat = codec.flatten(nest)
  assert flat[:4] == [2, 3, 4, 1]
  assert flat[4] is None and flat[5] == 'str' and flat[6] == b'bytes'
  assert flat[7] is nest[4]


ALL_DTYPES = [np.float32, np.float64, np.int32, np.uint8, np.int16, np.int8, np.complex64,
              np.int64, np.bool_, np.uint16, np.complex128, np.float16, np.uint32, np.uint64]


@pytest.mark.timeout(30)
@pytest.mark.parametrize('dtype', ALL_DTYPES)
@pytest.mark.parametrize('shape', [(), (0,), (3,), (2, 3, 1)])
def test_roundtrip_every_dtype(dtype, shape):
  rng = np.random.default_rng(0)
  arr = (rng.uniform(-100, 100, size=shape) * 3).astype(dtype)
  msg = service_pb2.Tensor.FromString(reference_encoding.encode(arr).SerializeToString())
  out = codec.decode_tensor(msg)
  assert out.dtype == np.dtype(dtype) and out.shape == shape
  np.testing.assert_array_equal(out, arr)
  # The code is TensorFlow's DataType number.
  assert msg.dtype == tf.as_dtype(dtype).as_datatype_enum


@pytest.mark.timeout(30)
def test_bfloat16_roundtrip():
  ml_dtypes = pytest.importorskip('ml_dtypes')
  arr = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
  out = codec.decode_tensor(reference_encoding.encode(arr))
  assert out.dtype == arr.dtype
  np.testing.assert_array_equal(out, arr)


@pytest.mark.timeout(30)
def test_big_endian_input_is_sent_little_endian():
  arr = np.arange(4, dtype='>i4')
  out = codec.decode_tensor(reference_encoding.encode(arr))
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [0, 1, 2, 3])


@pytest.mark.timeout(30)
@pytest.mark.parametrize('value', [1, -7, 2**31 - 1, 2**31, -2**40, 1.5, True, False, 1 + 2j,
                                   'hello', b'bytes', np.float16(2), np.int64(3)])
def test_python_scalars_follow_tf_convert_to_tensor(value):
  arr = codec.to_array(value)
  expected = tf.convert_to_tensor(value)
  assert codec.wire_code(arr) == expected.dtype.as_datatype_enum
  out = codec.decode_tensor(reference_encoding.encode(value))
  assert out.shape == ()
  if isinstance(value, str):
    assert out[()] == value.encode()
  else:
    assert out[()] == expected.numpy()


@pytest.mark.timeout(30)
def test_strings():
  arr = np.array([['a', 'bc'], ['', 'défi']])
  out = codec.decode_tensor(reference_encoding.encode(arr))
  assert out.dtype == object and out.shape == (2, 2)
  assert out.tolist() == [[b'a', b'bc'], [b'', 'défi'.encode()]]
  out = codec.decode_tensor(reference_encoding.encode(np.array([b'x', b'yz'], dtype=object)))
  assert out.tolist() == [b'x', b'yz']


@pytest.mark.timeout(30)
@pytest.mark.parametrize('value, match', [
    (None, 'None cannot be sent'),
    (2**64, 'does not fit'),
    (np.array([object()], dtype=object), 'cannot be sent'),
])
def test_unencodable_values(value, match):
  with pytest.raises(codec.CodecError, match=match):
    reference_encoding.encode(value)


@pytest.mark.timeout(30)
@pytest.mark.parametrize('tensor, match', [
    (service_pb2.Tensor(dtype=service_pb2.DT_INT32, shape=[2], content=b'\0' * 7), 'needs 8 bytes'),
    (service_pb2.Tensor(dtype=service_pb2.DT_INT32, shape=[-1], content=b''), 'negative'),
    (service_pb2.Tensor(dtype=99, shape=[1], content=b'\0'), 'unsupported dtype'),
    (service_pb2.Tensor(dtype=service_pb2.DT_STRING, shape=[2], string_val=[b'a']), '2 strings'),
    (service_pb2.Tensor(dtype=service_pb2.DT_INT32, shape=[2**62, 2**62], content=b''),
     'needs'),
])
def test_decode_rejects_inconsistent_tensors(tensor, match):
  with pytest.raises(codec.CodecError, match=match):
    codec.decode_tensor(tensor)


@pytest.mark.timeout(30)
def test_decoded_arrays_are_views():
  arr = np.arange(1000, dtype=np.float32)
  msg = reference_encoding.encode(arr)
  out = codec.decode_tensor(msg)
  assert not out.flags.writeable  # A view of the message bytes, not a copy.
  np.testing.assert_array_equal(out, arr)


def _spec(leaf):
  return service_pb2.TensorSpec(dtype=service_pb2.DT_INT32, shape=[])


@pytest.mark.timeout(30)
@pytest.mark.parametrize('nest', [
    None, [], (), {}, 0, [0, None], {'b': 0, 'a': [0, (0,)]},
    Point(y=0, x=[0, None]), {'k': Point(y=None, x=0)},
])
def test_structure_roundtrip(nest):
  structure = codec.structure_to_proto(nest, _spec)
  structure = service_pb2.Structure.FromString(structure.SerializeToString())
  leaves = [x for x in codec.flatten(nest) if x is not None]
  assert codec.count_leaves(structure) == len(leaves)
  packed = codec.make_packer(structure)(iter(range(100, 100 + len(leaves))))
  counter = iter(range(100, 100 + len(leaves)))  # None takes no tensor.
  expected = tf.nest.map_structure(lambda x: None if x is None else next(counter), nest)
  assert packed == expected
  assert type(packed) is type(expected) or codec.is_namedtuple(packed)


@pytest.mark.timeout(30)
def test_namedtuples_are_recreated_by_name_and_fields():
  structure = codec.structure_to_proto(Point(y=0, x=0), _spec)
  packed = codec.make_packer(structure)(iter([1, 2]))
  assert type(packed).__name__ == 'Point'
  assert packed._fields == ('y', 'x')
  assert packed.y == 1 and packed.x == 2
  # The class is cached: same class for the same name and fields.
  again = codec.make_packer(structure)(iter([3, 4]))
  assert type(again) is type(packed)


@pytest.mark.timeout(30)
def test_non_string_dict_keys_are_refused_in_signatures():
  with pytest.raises(codec.CodecError, match='keys must be strings'):
    codec.structure_to_proto({1: 0}, _spec)
