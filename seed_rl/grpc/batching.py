"""Server-side request validation, batch assembly and result fan-out (numpy only, no TensorFlow).

One `MethodBatcher` per bound method name and server run, shared by the server's handler threads
(one per client stream). `call(request)` validates a request (the outcome is cached per request
signature), copies its rows into the preallocated numpy buffers of the current batch with one
slice assignment of bytes per argument, and blocks until the batch has run. `call_known(data)`
does the same for the bytes of a request laid out like one served before, without parsing them
(`message_layout`). The caller whose rows complete the batch runs the bound function itself,
outside the lock, exactly like the original C++ op: no thread hand-off, and several batches can
be in flight at once. It then slices the outputs per caller, serializes one response per caller
and wakes them.

Batching and fan-out follow the original SEED RL op, with two fixes: result rows are
sliced per caller (the original used the mode of the call that completed the batch), and a call
whose rows do not fit into the free rows of the current batch (another caller's call of fewer rows
shifted it) waits, and its rows go into the next batch, first come first placed: its caller is
neither refused nor able to stall the others (the original aborted the process). Only a call of
more rows than a whole batch is refused, with INVALID_ARGUMENT for that caller alone. The thread
of a waiting call whose rows complete a batch runs that batch, so several may be in flight.

An optional per-method `Validator` checks the values of each request (e.g. env ids in range)
before its rows join a batch, so one bad caller is refused alone instead of making the whole
batch's function fail for every caller in it.

`MethodBatcher.pending` shows a partially filled batch (rows, callers, how long it has waited and,
once it has waited long enough, a copy of its rows) so that its owner can say why callers wait:
a batch that never fills (too few clients for the batch size) blocks them silently otherwise.
Its owner may also run that very batch now with padding rows of its own making
(`PendingBatch.run_padded`): the callers get their rows' outputs, the padding rows' are dropped.
"""

import _thread
import collections
import dataclasses
import functools
import logging
import math
import sys
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from seed_rl.grpc import codec
from seed_rl.grpc import errors
from seed_rl.grpc import message_layout
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire

# A bound function as seen by the batcher: flat input arrays -> flat output arrays.
Runner = Callable[[List[np.ndarray]], List[np.ndarray]]
# Runs a job on the calling thread and hands every caller its response (see MethodBatcher).
Executor = Callable[['Job'], None]
# Checks the flat argument arrays of one request; raises ValueError to refuse it (see Server.bind).
Validator = Callable[[List[np.ndarray]], None]
# Fills the missing rows of a starved batch, given a writable view of them per flat input
# (see `PendingBatch.run_padded`).
Padder = Callable[[List[np.ndarray]], None]

_PLAN_CACHE_SIZE = 64
_LAYOUT_CACHE_SIZE = 64
_monotonic = time.monotonic

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ArgSpec:
  """One flat input of a bound function: wire dtype code and shape (None = any size)."""
  code: int
  shape: Tuple[Optional[int], ...]

  @property
  def dtype(self) -> np.dtype:
    return codec.DTYPE_BY_CODE[self.code]


@dataclasses.dataclass
class MethodSpec:
  """Everything the batcher needs to know about a bound method name.

  Attributes:
    name: name on the wire.
    args: flat input specs (tf.nest.flatten order of the input_signature).
    output_codes: wire dtype of each flat output.
    batch_size: N for a batched method (see `detect_batch_size`), None for direct calls only.
    runners: the bound functions; consecutive launches go round robin over them.
    validate: optional check of each request's argument values (see `Server.bind`).
  """
  name: str
  args: List[ArgSpec]
  output_codes: List[int]
  batch_size: Optional[int]
  runners: List[Runner]
  validate: Optional[Validator] = None


def detect_batch_size(input_shapes: Sequence[Optional[Sequence[Optional[int]]]],
                      output_shapes: Sequence[Optional[Sequence[Optional[int]]]]
                     ) -> Optional[int]:
  """Batching auto-detection, as in the original op.

  A function is batched with batch size N iff it has at least one input, all inputs have rank >= 1
  and the same known leading dimension N (here also: fully defined shapes, so the batch can be
  preallocated), and no output has rank 0 or a known leading dimension other than N (unknown
  ranks and leading dimensions are allowed). Shapes are lists of dims (None = unknown), or None
  for an unknown rank. Returns N, or None for an unbatched function.
  """
  if not input_shapes:
    return None
  batch_size = None
  for shape in input_shapes:
    if shape is None or len(shape) < 1 or any(d is None for d in shape):
      return None
    if batch_size is None:
      batch_size = shape[0]
    elif shape[0] != batch_size:
      return None
  if batch_size is None or batch_size < 1:
    return None
  for shape in output_shapes:
    if shape is None:
      continue
    if len(shape) == 0:
      return None
    if shape[0] is not None and shape[0] != batch_size:
      return None
  return batch_size


def error_response(code: int, message: str) -> bytes:
  """A serialized CallResponse carrying an error status."""
  return service_pb2.CallResponse(status_code=code,
                                  status_error_message=message).SerializeToString()


class RequestError(Exception):
  """A request is refused; reported to its caller only."""

  def __init__(self, code: int, message: str):
    super().__init__(message)
    self.code = code
    self.message = message


def _invalid(message: str) -> RequestError:
  return RequestError(errors.INVALID_ARGUMENT, message)


class Slot:
  """Where a waiting caller receives its serialized response (a one-shot future).

  A pre-acquired lock that `set_result` releases: the cheapest blocking hand-over in CPython.
  """

  __slots__ = ('_lock', 'payload')

  def __init__(self):
    self._lock = _thread.allocate_lock()
    self._lock.acquire()
    self.payload: Optional[bytes] = None

  def set_result(self, payload: bytes) -> None:
    if self.payload is None:
      self.payload = payload
      self._lock.release()

  def done(self) -> bool:
    return self.payload is not None

  def wait(self) -> bytes:
    self._lock.acquire()
    return self.payload


# A caller in a batch: (slot, first row, number of rows, single) where `single` means the caller
# sent one element without the batch dimension and gets its outputs without it too.
Caller = Tuple[Slot, int, int, bool]


@dataclasses.dataclass
class _Plan:
  """Outcome of validating the shapes and dtypes of a request (cached per request signature)."""
  direct: bool
  rows: int = 1
  single: bool = True
  nbytes: List[int] = dataclasses.field(default_factory=list)  # expected len(content) per arg
  # Per argument (wire dtype or None for strings, shape as sent): the validator's views.
  shapes: List[Tuple[Optional[np.dtype], Tuple[int, ...]]] = dataclasses.field(
      default_factory=list)
  # Direct calls: per argument (wire dtype, shape) to view its bytes as an array (`nbytes` then
  # holds each len(content)); None where the generic decoder must read them (strings, negative
  # dimensions).
  views: Optional[List[Tuple[np.dtype, Tuple[int, ...]]]] = None
  # Whether requests of this plan may be read by a `message_layout.MessageLayout` (numeric
  # arguments only), and whether one was learnt already.
  learnable: bool = False
  learnt: bool = False


def _direct_plan(key: Tuple[Tuple[int, Tuple[int, ...]], ...]) -> '_Plan':
  """The plan of a direct call with these (validated) dtypes and shapes."""
  views = []
  for code, shape in key:
    dtype = codec.WIRE_DTYPE_BY_CODE.get(code)
    if dtype is None or any(d < 0 for d in shape):
      return _Plan(direct=True)
    views.append((dtype, shape))
  return _Plan(direct=True, views=views, learnable=True,
               nbytes=[math.prod(shape) * dtype.itemsize for dtype, shape in views])


@dataclasses.dataclass(frozen=True)
class PendingBatch:
  """A partially filled batch of a method, as `MethodBatcher.pending` saw it.

  Attributes:
    method: the method's name on the wire.
    batch_size: rows the batch needs before it runs.
    rows: rows waiting in it.
    callers: calls waiting in it (a call brings one or more rows).
    waiting_secs: seconds since its first rows arrived.
    inputs: a copy of the waiting rows of every flat input (`[rows, ...]`, input-signature order),
      or None when the batch had not waited `min_waiting_secs` (see `pending`).
    executions_in_flight: executions of the server's bound functions running when the batch
      was seen (`Server.pending_batches` fills it in): while other callers' batches run (e.g.
      blocked on back-pressure), a waiting batch is not short of callers.
    queued_rows: rows of the calls that did not fit into this batch and wait for the next one.
    queued_callers: those calls.
    queued_inputs: a copy of their rows like `inputs` (in order of arrival; None when `inputs`
      is).
    full_batches: full batches the method had run when this one was seen: a count that grows
      while batches fill.
    run_padded: runs this very batch now, its missing rows filled by the given `Padder`, and
      returns True; or returns False, doing nothing, when rows joined the batch or it ran since
      it was seen (race-free: only the batch as seen is ever padded). The callers get their
      rows' outputs; the padding rows' outputs are dropped. None where no batcher made it.
  """
  method: str
  batch_size: int
  rows: int
  callers: int
  waiting_secs: float
  inputs: Optional[List[np.ndarray]] = None
  executions_in_flight: int = 0
  queued_rows: int = 0
  queued_callers: int = 0
  queued_inputs: Optional[List[np.ndarray]] = None
  full_batches: int = 0
  run_padded: Optional[Callable[[Padder], bool]] = None


class _Batch:
  """Preallocated input buffers of one batch and the callers that filled it.

  A batch that has run is used again for a later one when nothing but the batch refers to its
  buffers (`reusable`): making the buffers of a batch is a large share of the server's Python
  per request (docs/performance.md, The RPC layer).
  """

  __slots__ = ('buffers', 'byte_views', 'callers', 'filled', 'since', '_refcounts')

  def __init__(self, args: Sequence[ArgSpec]):
    self.buffers = [np.empty(a.shape, a.dtype) for a in args]
    self.byte_views = [None if a.code == codec.DT_STRING else
                       memoryview(b.reshape(-1).view(np.uint8)) for a, b in
                       zip(args, self.buffers)]
    self.callers: List[Caller] = []
    self.filled = 0
    self.since = 0.  # time.monotonic() when the first rows arrived.
    self._refcounts = [sys.getrefcount(b) for b in self.buffers]

  def reusable(self) -> bool:
    """Whether the buffers may take the rows of another batch: no one else refers to them.

    TensorFlow keeps a reference to each array whose memory a tensor of it uses (e.g. a tensor
    the bound function enqueued, or one still in use on another thread), so an array that only
    this batch refers to is read by no one.
    """
    return [sys.getrefcount(b) for b in self.buffers] == self._refcounts

  def reset(self) -> None:
    self.callers = []
    self.filled = 0


class _Queued:
  """A call whose rows did not fit into the free rows of the current batch: they go into the next
  one that has room for them once the calls queued before it are placed.

  Its thread waits on `placed` (pre-acquired, like `Slot`), which is released once its rows are
  in a batch (`completed` is then the full batch and runner when they completed it: that thread
  runs it) or once `fail_pending` answered it.
  """

  __slots__ = ('contents', 'strings', 'plan', 'slot', 'placed', 'completed')

  def __init__(self, contents, strings, plan: '_Plan', slot: Slot):
    self.contents = contents
    self.strings = strings
    self.plan = plan
    self.slot = slot
    self.placed = _thread.allocate_lock()
    self.placed.acquire()
    self.completed: Optional[Tuple[_Batch, Runner]] = None


@dataclasses.dataclass
class Job:
  """One execution of a bound function; `run` is called by the thread that completed the batch
  (or made the direct call)."""
  runner: Runner
  inputs: List[np.ndarray]
  callers: List[Caller]
  output_codes: List[int]
  batch_size: Optional[int]  # set when the outputs must be split by rows

  def run(self) -> List[Tuple[Slot, bytes]]:
    """Runs the function and returns one serialized response per caller."""
    try:
      outputs = self.runner(self.inputs)
      self.inputs = None  # Let the buffers go as soon as TensorFlow does.
      if self.batch_size is None:
        payload = wire.encode_call_response(outputs, self.output_codes)
        return [(caller[0], payload) for caller in self.callers]
      return _encode_rows(outputs, self.output_codes, self.callers, self.batch_size)
    except RequestError as e:
      payload = error_response(e.code, e.message)
    except Exception as e:  # pylint: disable=broad-except
      payload = error_response(*status_of_exception(e))
    return [(caller[0], payload) for caller in self.callers]


def status_of_exception(e: BaseException) -> Tuple[int, str]:
  """(code, message) for an exception raised by a bound function: the code of a
  `tf.errors.OpError` (duck-typed, no TF import), UNKNOWN for anything else."""
  code = getattr(e, 'error_code', None)
  message = getattr(e, 'message', None)
  if isinstance(code, int) and isinstance(message, str):
    return code, message
  return errors.UNKNOWN, f'{type(e).__name__}: {e}'


def _encode_rows(outputs: Sequence[np.ndarray], codes: Sequence[int], callers: Sequence[Caller],
                 batch_size: int) -> List[Tuple[Slot, bytes]]:
  """Slices every output per caller (rows [start, start+k), or row `start` without the batch
  dimension for a single-element caller) and serializes one response per caller."""
  slicers = []
  for out, code in zip(outputs, codes):
    out = np.asarray(out)
    if out.ndim < 1:
      raise _invalid('Output must be at least rank 1 when batching is enabled')
    if out.shape[0] != batch_size:
      raise _invalid('All outputs must have the same batch size as the inputs when batching is '
                     f'enabled, expected: {batch_size} was: {out.shape[0]}')
    slicers.append(wire.RowSlicer(out, code))
  results = []
  for slot, start, rows, single in callers:
    parts: List[Any] = []
    for slicer in slicers:
      slicer.add(parts, start, rows, single)
    results.append((slot, b''.join(parts)))
  return results


class MethodBatcher:
  """Validates the calls of one method and groups them into batches (thread-safe).

  Args:
    spec: the method.
    execute: runs a `Job` on the calling thread and delivers its responses to the callers'
      slots (the server wraps `Job.run` to track executions in flight).
  """

  def __init__(self, spec: MethodSpec, execute: Executor):
    self._spec = spec
    self._execute = execute
    self._lock = threading.Lock()
    self._nargs = len(spec.args)
    self._codes = tuple(a.code for a in spec.args)
    self._batch_size = spec.batch_size
    self._counter = 0
    self._plans: Dict[Tuple[Any, ...], _Plan] = collections.OrderedDict()
    self._validator = spec.validate
    self._logged_validator_errors: Set[type] = set()
    # Request size -> (layout, plan) pairs of the requests seen (see `call_known`).
    self._known: Dict[int, Tuple[Tuple[message_layout.MessageLayout, _Plan], ...]] = {}
    if spec.batch_size is not None:
      self._full_shapes = tuple(a.shape for a in spec.args)
      self._element_shapes = tuple(a.shape[1:] for a in spec.args)
      # Numeric rows are copied with one slice assignment of bytes per argument (row_bytes > 0);
      # strings element by element (string_sizes: elements per row).
      self._row_bytes = tuple(
          0 if a.code == codec.DT_STRING else math.prod(s) * a.dtype.itemsize
          for s, a in zip(self._element_shapes, spec.args))
      self._string_sizes = {i: math.prod(s) for i, (a, s) in
                            enumerate(zip(spec.args, self._element_shapes))
                            if a.code == codec.DT_STRING}
      self._string_args = sorted(self._string_sizes)
      self._current = self._new_batch()
      self._spare: collections.deque = collections.deque()
      # Calls waiting for room in a later batch, in order of arrival.
      self._queued: Deque[_Queued] = collections.deque()
      self._generation = 0  # Counts the batches made current: names the batch `pending` saw.
      self._full_batches = 0

  # --- public ---------------------------------------------------------------------------------

  @property
  def name(self) -> str:
    """The method's name on the wire."""
    return self._spec.name

  def call(self, request: service_pb2.CallRequest, data: Optional[bytes] = None) -> bytes:
    """Handles one request; blocks until its response (serialized CallResponse) is ready.

    `data`, the bytes `request` was parsed from, lets later requests like it skip parsing
    (`call_known`).
    """
    try:
      tensors = list(request.tensor)
      key = tuple([(t.dtype, tuple(t.shape)) for t in tensors])
      plan = self._plans.get(key)
      if plan is None:
        plan = self._new_plan(key)
      if data is not None and plan.learnable and not plan.learnt:
        self._learn(data, request, plan)
      if plan.direct:
        contents = [t.content for t in tensors] if plan.views is not None else None
        if contents is None or list(map(len, contents)) != plan.nbytes:
          slot = self._direct_decoded(tensors)  # Strings, or the decoder's error of a size.
        else:
          slot = self._direct(contents, plan)
      else:
        slot = self._enqueue(tensors, plan)
    except RequestError as e:
      return error_response(e.code, e.message)
    return slot.wait()

  def call_known(self, data: bytes) -> Optional[bytes]:
    """Like `call`, for a request laid out like one this batcher has served (or None: then
    it must be parsed and go to `call`)."""
    for layout, plan in self._known.get(len(data), ()):
      if layout.matches(data):
        try:
          if plan.direct:  # Arrays straight on the request's bytes.
            slot = self._run_direct(layout.arrays(data))
          else:
            view = memoryview(data)
            slot = self._enqueue_rows([view[start:end] for start, end in layout.spans], (),
                                      plan)
        except RequestError as e:
          return error_response(e.code, e.message)
        return slot.wait()
    return None

  def pending(self, min_waiting_secs: float = 0.,
              now: Optional[float] = None) -> Optional[PendingBatch]:
    """The partially filled batch, or None (empty batch, or a method without batching).

    Thread-safe and cheap: it takes the batcher's lock briefly and copies the waiting rows only
    when the batch has waited at least `min_waiting_secs` (an unfilled batch, not the common
    case of a batch filling up); `PendingBatch.inputs` and `queued_inputs` are None otherwise.
    `now` is a `time.monotonic()` reading (the current one by default).
    """
    if self._batch_size is None:
      return None
    now = _monotonic() if now is None else now
    with self._lock:
      batch = self._current
      rows = batch.filled
      if not rows:
        return None
      waited = max(0., now - batch.since)
      inputs = queued_inputs = None
      if waited >= min_waiting_secs:
        inputs = [buffer[:rows].copy() for buffer in batch.buffers]
        queued_inputs = self._queued_arrays()
      pending = PendingBatch(
          self._spec.name, self._batch_size, rows, len(batch.callers), waited, inputs,
          queued_rows=sum(call.plan.rows for call in self._queued),
          queued_callers=len(self._queued), queued_inputs=queued_inputs,
          full_batches=self._full_batches,
          run_padded=functools.partial(self._run_padded, self._generation, rows))
    return pending

  def fail_pending(self, code: int, message: str) -> None:
    """Answers every caller of the partially filled batch, and every call waiting for room in
    a later batch, with an error, and empties both."""
    if self._batch_size is None:
      return
    payload = error_response(code, message)
    with self._lock:
      callers = self._current.callers
      queued, self._queued = self._queued, collections.deque()
      self._generation += 1
      self._current = self._new_batch()
    for caller in callers:
      caller[0].set_result(payload)
    for call in queued:
      call.slot.set_result(payload)
      call.placed.release()

  # --- validation -------------------------------------------------------------------------------

  def _new_plan(self, key) -> _Plan:
    """Validates a request signature not seen recently; caches the plan of a valid one."""
    plan = self._validate(key)
    with self._lock:
      if len(self._plans) >= _PLAN_CACHE_SIZE:
        self._plans.popitem(last=False)
      self._plans[key] = plan
    return plan

  def _learn(self, data: bytes, request: service_pb2.CallRequest, plan: _Plan) -> None:
    """Remembers the layout of a request of `plan` if its contents have the right sizes."""
    if [len(t.content) for t in request.tensor] != plan.nbytes:
      return
    plan.learnt = True
    layout = message_layout.learn_request(data, request)
    if layout is None:
      return
    with self._lock:
      if len(self._known) >= _LAYOUT_CACHE_SIZE:
        for entries in self._known.values():
          for _, known_plan in entries:
            known_plan.learnt = False
        self._known.clear()
      self._known[layout.size] = self._known.get(layout.size, ()) + ((layout, plan),)

  def _validate(self, key: Tuple[Tuple[int, Tuple[int, ...]], ...]) -> _Plan:
    """Checks count, then per argument rank, shape suffix and dtype (the original's order)."""
    if len(key) != self._nargs:
      raise _invalid(f'Expects {self._nargs} arguments, but {len(key)} is provided')
    if self._batch_size is None or (key and key[0][1] == self._full_shapes[0]):
      expected = [a.shape for a in self._spec.args]
      self._check_args(key, expected, extra_rank=0)
      return _direct_plan(key)
    element_shapes = self._element_shapes
    batched_call = len(key[0][1]) == len(element_shapes[0]) + 1
    extra = 1 if batched_call else 0
    self._check_args(key, element_shapes, extra_rank=extra)
    rows = key[0][1][0] if batched_call else 1
    shapes = [(codec.WIRE_DTYPE_BY_CODE.get(code), shape) for code, shape in key]
    if batched_call:
      for i, (_, shape) in enumerate(key):
        if shape[0] != rows:
          raise _invalid(f'Expects arg[{i}] to start with the batching dimension {rows} but had '
                         f'shape {codec.format_shape(shape)}')
      if rows < 1:
        raise _invalid(f'Expects the batching dimension to be at least 1 but it is {rows}')
      if rows > self._batch_size:
        raise _invalid(f'A call with {rows} rows does not fit into the batch of '
                       f'{self._batch_size} rows (Learner-side batch size exceeded)')
    # Expected len(content) of every argument (0 for strings, whose count is checked apart).
    nbytes = [rows * rb for rb in self._row_bytes]
    return _Plan(direct=False, rows=rows, single=not batched_call, nbytes=nbytes, shapes=shapes,
                 learnable=not self._string_args)

  def _check_args(self, key, expected_shapes, extra_rank: int) -> None:
    fmt = codec.format_shape
    for i, ((code, shape), want, want_code) in enumerate(zip(key, expected_shapes, self._codes)):
      if want is None:  # Unknown rank: any shape.
        want, shape = (), ()
      rank = len(want) + extra_rank
      if len(shape) != rank:
        raise _invalid(f'Expects arg[{i}] to have shape with {rank} dimension(s), but had shape '
                       f'{fmt(shape)}')
      suffix = shape[extra_rank:]
      if any(w is not None and w != d for w, d in zip(want, suffix)):
        raise _invalid(f'Expects arg[{i}] to have shape with suffix {fmt(want)}, but had shape '
                       f'{fmt(shape)}')
      if code != want_code:
        raise _invalid(f'Expects arg[{i}] to be {codec.dtype_name(want_code)} but '
                       f'{codec.dtype_name(code)} is provided')

  def _check_values(self, arrays: List[np.ndarray]) -> None:
    """Runs the method's validator on one request's arrays (the caller's thread, no lock held).

    ValueError refuses the request with INVALID_ARGUMENT and the error's message; any other
    exception is a bug of the validator: INTERNAL for this caller, and its traceback is logged the
    first time each exception type occurs (a broken validator must not flood the log).
    """
    try:
      self._validator(arrays)
    except ValueError as e:
      raise _invalid(str(e) or f'The validator of {self._spec.name} refused the call') from None
    except Exception as e:  # pylint: disable=broad-except
      with self._lock:
        first = type(e) not in self._logged_validator_errors
        self._logged_validator_errors.add(type(e))
      if first:
        _log.error('seed_rl.grpc: the validator of %s raised %s (calls get INTERNAL; later %s '
                   'errors of this validator are not logged)', self._spec.name,
                   type(e).__name__, type(e).__name__, exc_info=e)
      raise RequestError(errors.INTERNAL, f'The validator of {self._spec.name} failed: '
                         f'{type(e).__name__}: {e}') from None

  def _check_rows(self, contents, strings, plan: _Plan) -> None:
    """Runs the validator on read-only views of a batched call's arguments, shaped as sent."""
    self._check_values(self._arrays(contents, strings, plan))

  @staticmethod
  def _arrays(contents, strings, plan: _Plan) -> List[np.ndarray]:
    """Read-only views of a batched call's arguments, shaped as sent."""
    arrays = []
    string_values = iter(strings)
    for content, (dtype, shape) in zip(contents, plan.shapes):
      if dtype is None:
        arrays.append(next(string_values).reshape(shape))
      else:
        arrays.append(np.frombuffer(content, dtype).reshape(shape))
    return arrays

  def _queued_arrays(self) -> List[np.ndarray]:
    """A copy of the rows of the queued calls, `[rows, ...]` per flat input (under the lock)."""
    parts = [[buffer[:0]] for buffer in self._current.buffers]
    for call in self._queued:
      for part, array, shape in zip(parts, self._arrays(call.contents, call.strings, call.plan),
                                    self._element_shapes):
        part.append(array.reshape((call.plan.rows,) + shape))
    return [np.concatenate(part) for part in parts]

  # --- execution --------------------------------------------------------------------------------

  def _next_runner(self) -> Runner:
    runners = self._spec.runners
    runner = runners[self._counter % len(runners)]
    self._counter += 1  # Benign race without the lock, as in the original.
    return runner

  def _direct_decoded(self, tensors) -> Slot:
    """A direct call whose arguments the generic decoder reads (strings) or refuses."""
    try:
      inputs = [codec.decode_tensor(tensor) for tensor in tensors]
    except codec.CodecError as e:
      raise _invalid(str(e)) from None
    return self._run_direct(inputs)

  def _direct(self, contents, plan: _Plan) -> Slot:
    """A direct call whose arguments' bytes (of the right sizes) are `contents`."""
    return self._run_direct([np.ndarray(shape, dtype, content)
                             for content, (dtype, shape) in zip(contents, plan.views)])

  def _run_direct(self, inputs: List[np.ndarray]) -> Slot:
    if self._validator is not None:
      self._check_values(inputs)
    slot = Slot()
    self._execute(Job(self._next_runner(), inputs, [(slot, 0, 0, False)],
                      self._spec.output_codes, None))
    return slot

  def _new_batch(self) -> _Batch:
    return _Batch(self._spec.args)

  def _recycle(self, batch: _Batch) -> None:
    """Keeps the buffers of `batch`, which has run, for a future batch, or makes new ones where
    something still refers to them; outside the lock, once `batch` has answered its callers
    (so that they do not wait for this)."""
    if batch.reusable():
      batch.reset()
    else:
      batch = self._new_batch()
    self._spare.append(batch)

  def _enqueue(self, tensors, plan: _Plan) -> Slot:
    rows = plan.rows
    contents = [t.content for t in tensors]
    if list(map(len, contents)) != plan.nbytes:
      self._raise_size_error(tensors, contents, plan)
    for i in self._string_args:
      if len(tensors[i].string_val) != rows * self._string_sizes[i]:
        self._raise_size_error(tensors, contents, plan)
    strings = [codec.decode_tensor(tensors[i]).reshape((rows,) + self._element_shapes[i])
               for i in self._string_args]
    return self._enqueue_rows(contents, strings, plan)

  def _enqueue_rows(self, contents, strings, plan: _Plan) -> Slot:
    """Adds a batched call's rows (`contents` of the right sizes, `strings` decoded) to the
    current batch, or queues them for a later batch when they do not fit into its free rows,
    and runs the batch they complete."""
    if self._validator is not None:
      self._check_rows(contents, strings, plan)
    slot = Slot()
    with self._lock:
      batch = self._current
      if batch.filled + plan.rows > self._batch_size:
        queued = _Queued(contents, strings, plan, slot)
        self._queued.append(queued)
      else:
        queued = None
        self._put(batch, contents, strings, plan, slot)
        if batch.filled < self._batch_size:
          return slot
        self._full_batches += 1
        runner = self._next_runner()
        self._next_batch()
    if queued is not None:
      queued.placed.acquire()  # Until its rows are in a batch, or fail_pending answered it.
      if queued.completed is None:
        return slot
      batch, runner = queued.completed
    # This call completed the batch: run it here, outside the lock.
    self._run(batch, runner)
    return slot

  def _put(self, batch: _Batch, contents, strings, plan: _Plan, slot: Slot) -> None:
    """Copies a call's rows into the free rows of `batch` (under the lock)."""
    start = batch.filled
    if not start:
      batch.since = _monotonic()
    end = start + plan.rows
    for view, content, row_bytes in zip(batch.byte_views, contents, self._row_bytes):
      if view is not None:
        view[start * row_bytes:end * row_bytes] = content
    for i, values in zip(self._string_args, strings):
      batch.buffers[i][start:end] = values
    batch.callers.append((slot, start, plan.rows, plan.single))
    batch.filled = end

  def _next_batch(self) -> None:
    """Makes a fresh batch current (under the lock), in place of one that is full or leaves to
    run padded, and moves the queued calls into it, first come first placed, while they fit.

    A batch that queued calls fill goes to the thread of the call that filled it, which runs it,
    and another fresh batch takes their place.
    """
    queued = self._queued
    while True:
      self._generation += 1
      batch = self._current = self._spare.popleft() if self._spare else self._new_batch()
      full = False
      while queued and not full and batch.filled + queued[0].plan.rows <= self._batch_size:
        call = queued.popleft()
        self._put(batch, call.contents, call.strings, call.plan, call.slot)
        call.contents = call.strings = None
        full = batch.filled == self._batch_size
        if full:
          self._full_batches += 1
          call.completed = (batch, self._next_runner())
        call.placed.release()
      if not full:
        return

  def _run(self, batch: _Batch, runner: Runner) -> None:
    """Runs a batch that left the batcher, on this thread, and keeps its buffers for later."""
    self._execute(Job(runner, batch.buffers, batch.callers, self._spec.output_codes,
                      self._batch_size))
    self._recycle(batch)

  def _run_padded(self, generation: int, rows: int, pad: Padder) -> bool:
    """`PendingBatch.run_padded` of the batch that was current as generation `generation`
    with `rows` rows."""
    with self._lock:
      batch = self._current
      if generation != self._generation or batch.filled != rows:
        return False
      runner = self._next_runner()
      self._next_batch()
    try:
      pad([buffer[rows:] for buffer in batch.buffers])
    except Exception as e:  # pylint: disable=broad-except
      payload = error_response(errors.INTERNAL, f'Padding a starved batch of {self._spec.name} '
                               f'failed: {type(e).__name__}: {e}')
      for caller in batch.callers:
        caller[0].set_result(payload)
      raise
    self._run(batch, runner)
    return True

  def _raise_size_error(self, tensors, contents, plan: _Plan) -> None:
    for i, (t, content, n) in enumerate(zip(tensors, contents, plan.nbytes)):
      if i in self._string_sizes:
        got, n, what = len(t.string_val), plan.rows * self._string_sizes[i], 'strings'
      else:
        got, what = len(content), 'bytes'
      if got != n:
        raise _invalid(f'Cannot parse tensor arg[{i}]: expected {n} {what} of data for shape '
                       f'{codec.format_shape(t.shape)} but got {got}')
    raise _invalid('Cannot parse tensor: wrong data size')  # pragma: no cover
