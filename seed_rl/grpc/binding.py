"""Turns a `tf.function` with an input_signature into what the server serves (TensorFlow side).

`bind_function` reads the function's flat input specs and output specs, decides whether it is
batched (`batching.detect_batch_size`, the original's auto-detection) and returns a `Runner`:
flat numpy arrays in, flat numpy arrays out.
The runner calls the traced function with flat tensors, skipping `tf.function`'s argument
canonicalisation and output packing (together they cost more than running a small function with
eight inputs); it falls back to the structured call if the traced function's flat layout ever
differs from `tf.nest.flatten(input_signature)` / `tf.nest.flatten(outputs)`.
"""

import dataclasses
import itertools
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from seed_rl.grpc import batching
from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2

try:  # Private but stable for years; tf.constant adds per-tensor Python on top of it.
  from tensorflow.python.framework import ops as _tf_ops  # pylint: disable=g-direct-tensorflow-import
  _EagerTensor = _tf_ops.EagerTensor
except (ImportError, AttributeError):  # pragma: no cover
  _EagerTensor = None

try:  # Private, stable since TF 2.0: the op-level entry point every eager function call ends in.
  from tensorflow.python.eager import execute as _tf_execute  # pylint: disable=g-direct-tensorflow-import
  from tensorflow.python.eager.polymorphic_function import atomic_function as _tf_atomic  # pylint: disable=g-direct-tensorflow-import
  _quick_execute = _tf_execute.quick_execute
  _InterpolateRuntimeError = _tf_atomic.InterpolateRuntimeError
except (ImportError, AttributeError):  # pragma: no cover
  _quick_execute = None


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
  codec.add_bfloat16(import_if_missing=False)  # TensorFlow has loaded ml_dtypes.
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

  Fastest first: the function op executed directly (`_make_execute_call`), the concrete
  function's atomic inference function (`inference_fn.call_flat`, public attributes of the traced
  function; much less Python than `fn(*args)`), then the concrete function's flat call, then the
  plain structured call. The fast paths are used only when the flat input/output layout checks
  out at bind time.
  """
  flatten = tf.nest.flatten
  if _flat_inputs_match(concrete, flat_specs):
    atomic = getattr(concrete, 'inference_fn', None)
    function_type = getattr(atomic, 'function_type', None)
    if (atomic is not None and hasattr(atomic, 'call_flat') and function_type is not None and
        len(function_type.flat_outputs) == num_outputs):
      call_execute = _make_execute_call(atomic, concrete, num_outputs)
      if call_execute is not None:
        return call_execute

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


def _make_execute_call(atomic, concrete, num_outputs: int
                       ) -> Optional[Callable[[List[Any]], List[Any]]]:
  """The cheapest call of a traced function: straight to the eager op executor.

  Does what `AtomicFunction.call_flat` does in eager mode for a function with no control captures
  and no resource outputs (the only cases where it does more), without its per-call Python
  (a large part of a small function's call cost): executes the function op with the calling
  thread's function call options and device scope, and adds the function's node names and
  stack traces to a TensorFlow error like `call_flat` does. Server threads never record on a
  gradient tape, so `call_flat`'s pause of tape recording is not needed. None when any of this
  does not hold (the caller then uses `call_flat`).
  """
  if _quick_execute is None:
    return None
  call_options = getattr(atomic, 'call_options', None)
  context = getattr(atomic, '_bound_context', None)  # pylint: disable=protected-access
  if (call_options is None or getattr(call_options, 'control_captures', True) or
      context is None or not hasattr(context, 'function_call_options')):
    return None
  if any(getattr(o.dtype, '_handle_data', None) for o in atomic.function_type.flat_outputs):
    return None
  name = atomic.name.decode('utf-8') if isinstance(atomic.name, bytes) else str(atomic.name)
  interpolate = _InterpolateRuntimeError(atomic)
  chain = itertools.chain.from_iterable

  def call_execute(tensors):
    attrs = tuple(chain(context.function_call_options.as_attrs().items()))
    captured = concrete.captured_inputs  # Evaluated per call: captures may be by reference.
    with interpolate:
      return _quick_execute(name, num_outputs, tensors + captured if captured else tensors,
                            attrs, context)
  return call_execute


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

