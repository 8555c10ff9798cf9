"""Turns a `tf.function` with an input_signature into what the server serves (TensorFlow side).

`bind_function` reads the function's flat input specs and output specs, decides whether it is
batched (reference §2.4.1) and returns a `Runner`: flat numpy arrays in, flat numpy arrays out.
The runner calls the traced function with flat tensors, skipping `tf.function`'s argument
canonicalisation and output packing (together they cost more than running a small function with
eight inputs); it falls back to the structured call if the traced function's flat layout ever
differs from `tf.nest.flatten(input_signature)` / `tf.nest.flatten(outputs)`.
"""

import dataclasses
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from seed_rl.grpc import batching
from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2

try:  # Private but stable for years; tf.constant adds ~25 us of Python per tensor on top of it.
  from tensorflow.python.framework import ops as _tf_ops  # pylint: disable=g-direct-tensorflow-import
  _EagerTensor = _tf_ops.EagerTensor
except (ImportError, AttributeError):  # pragma: no cover
  _EagerTensor = None


@dataclasses.dataclass
class BoundFunction:
  """One bound tf.function, analysed."""
  name: str
  args: List[batching.ArgSpec]
  output_structure: service_pb2.Structure
  output_codes: List[int]
  output_shapes: List[Optional[List[Optional[int]]]]
  runner: batching.Runner

  @property
  def batch_size(self) -> Optional[int]:
    return batching.detect_batch_size([a.shape for a in self.args], self.output_shapes)


def _code_of(dtype: tf.DType, what: str) -> int:
  if dtype == tf.string:
    return codec.DT_STRING
  try:
    code = codec.CODE_BY_DTYPE.get(np.dtype(dtype.as_numpy_dtype))
  except TypeError:
    code = None
  if code is None:
    raise ValueError(f'{what} has dtype {dtype.name}, which cannot be sent over the wire.')
  return code


def _shape_of(shape: tf.TensorShape) -> Optional[Tuple[Optional[int], ...]]:
  return None if shape.rank is None else tuple(shape.as_list())


def function_name(fn: Any) -> str:
  """The name on the wire: the Python function's __name__."""
  python_function = getattr(fn, 'python_function', None)
  if python_function is not None and hasattr(python_function, '__name__'):
    return python_function.__name__
  return getattr(fn, '__name__', type(fn).__name__)


def bind_function(fn: Any, cpu_device: str) -> BoundFunction:
  """Analyses `fn` (a tf.function with input_signature) and builds its runner.

  Args:
    fn: the tf.function.
    cpu_device: full name of the device the call arguments are created on.
  Raises:
    ValueError: no input_signature, or an input/output that cannot be sent.
  """
  if getattr(fn, 'input_signature', None) is None:
    raise ValueError('tf.function must have input_signature set.')
  name = function_name(fn)
  flat_specs = tf.nest.flatten(fn.input_signature)
  args = []
  for i, spec in enumerate(flat_specs):
    if not isinstance(spec, tf.TensorSpec):
      raise ValueError(f'Function {name!r}: input {i} is a {type(spec).__name__}; only '
                       'tf.TensorSpec inputs can be served.')
    args.append(batching.ArgSpec(_code_of(spec.dtype, f'Function {name!r} input {i}'),
                                 _shape_of(spec.shape)))
  concrete = fn.get_concrete_function()
  outputs = concrete.structured_outputs
  flat_outputs = [o for o in tf.nest.flatten(outputs) if o is not None]
  output_codes, output_shapes = [], []
  for i, out in enumerate(flat_outputs):
    if not isinstance(out, (tf.Tensor, tf.TensorSpec)):
      raise ValueError(f'Function {name!r}: output {i} is a {type(out).__name__}; only tensors '
                       'and None can be returned.')
    output_codes.append(_code_of(out.dtype, f'Function {name!r} output {i}'))
    output_shapes.append(_shape_of(out.shape))

  def leaf_to_spec(leaf):
    shape = _shape_of(leaf.shape)
    return service_pb2.TensorSpec(
        dtype=_code_of(leaf.dtype, f'Function {name!r} output'),
        shape=[-1 if d is None else d for d in shape or ()], unknown_rank=shape is None)

  try:
    structure = codec.structure_to_proto(outputs, leaf_to_spec)
  except codec.CodecError as e:
    raise ValueError(f'Function {name!r}: {e}') from None
  runner = _make_runner(fn, concrete, flat_specs, len(flat_outputs), cpu_device)
  return BoundFunction(name, args, structure, output_codes, output_shapes, runner)


def _flat_inputs_match(concrete, flat_specs) -> bool:
  """True if the concrete function's flat inputs are the signature's specs in tf.nest order
  (followed by the captured inputs)."""
  inputs = concrete.inputs
  if len(inputs) - len(concrete.captured_inputs) != len(flat_specs):
    return False
  return all(t.dtype == s.dtype and (s.shape.rank is None or
                                     t.shape.as_list() == s.shape.as_list())
             for t, s in zip(inputs, flat_specs))


def _make_call(fn, concrete, flat_specs, num_outputs: int) -> Callable[[List[Any]], List[Any]]:
  """Returns call(flat input tensors) -> flat output tensors (None outputs left out).

  Fastest first: the concrete function's atomic inference function (`inference_fn.call_flat`,
  public attributes of the traced function; ~3x less Python than `fn(*args)`), then the concrete
  function's flat call, then the plain structured call. The fast paths are used only when the
  flat input/output layout checks out at bind time.
  """
  flatten = tf.nest.flatten
  if _flat_inputs_match(concrete, flat_specs):
    atomic = getattr(concrete, 'inference_fn', None)
    function_type = getattr(atomic, 'function_type', None)
    if (atomic is not None and hasattr(atomic, 'call_flat') and function_type is not None and
        len(function_type.flat_outputs) == num_outputs):

      def call_atomic(tensors):
        return atomic.call_flat(*tensors, *concrete.captured_inputs) or []
      return call_atomic
    if hasattr(concrete, '_call_flat'):
      call_flat = concrete._call_flat  # pylint: disable=protected-access

      def call_concrete(tensors):
        outputs = call_flat(tensors, concrete.captured_inputs)
        return [o for o in flatten(outputs) if o is not None] if outputs is not None else []
      return call_concrete
  signature = fn.input_signature

  def call_structured(tensors):
    outputs = fn(*tf.nest.pack_sequence_as(signature, tensors))
    return [o for o in flatten(outputs) if o is not None] if outputs is not None else []
  return call_structured


def _make_runner(fn, concrete, flat_specs, num_outputs: int,
                 cpu_device: str) -> batching.Runner:
  call = _make_call(fn, concrete, flat_specs, num_outputs)
  if _EagerTensor is not None:
    def to_tensors(arrays):
      return [_EagerTensor(a, cpu_device, None) for a in arrays]
  else:  # pragma: no cover
    def to_tensors(arrays):
      with tf.device(cpu_device):
        return [tf.constant(a) for a in arrays]

  def run(arrays: List[np.ndarray]) -> List[np.ndarray]:
    return [o.numpy() for o in call(to_tensors(arrays))]

  return run


def cpu_device_name() -> str:
  """Full name of the local CPU device (where call arguments are placed, as in the original)."""
  with tf.device('/cpu:0'):
    return tf.constant(0).device

