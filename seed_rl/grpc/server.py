"""The central-inference server: serves bound tf.functions over gRPC with server-side batching.

Transports: gRPC (`host:port`, `unix:/path`), and shared memory (`shm:NAME`, `seed_rl.shm`) for
actors on the learner's machine; one server serves any mix of them. Both carry the same bytes
(a serialized CallRequest, a serialized CallResponse) into the same path (`_Run._serve`): token,
limits, batching, per-caller validation, finish and shutdown statuses are the same. A
shared-memory connection is served like a gRPC stream, by one thread of its own.

Server model: the **synchronous grpcio server** with a pool of daemon threads sized for the number
of client streams (`max_concurrent_streams`, default 1024), and no other threads. Every actor keeps
one stream open for its whole life, and a sync server parks one pool thread per open stream, so
the pool is sized for the largest expected number of actors: an idle stream costs one parked
thread (a few tens of KB of memory, no CPU). A stream beyond the limit is refused with
RESOURCE_EXHAUSTED and a message naming the limit (the pool has a few spare threads to say so, and
gRPC's `maximum_concurrent_rpcs` backs it up) instead of waiting silently for a free thread. Why
not grpc.aio (one event-loop thread for any number of streams): the bound function must not run
on the event loop (it may block, e.g. on a full unroll queue), so every batch costs two thread
hand-offs (loop -> worker -> loop). In the sync model the handler
thread whose request completes a batch runs the bound function itself, outside any lock, like the
original C++ op; several batches can be in flight. With a few actors the sync model steps
environments faster, while raw ping-pong rates of the two models are the same. Pool threads are
daemon threads so that a bound function blocked forever (e.g. on a queue nobody drains) cannot
keep the process from exiting.

Defences, in the order a request meets them: the token, checked from the call metadata before
anything of the request is decoded or logged (refusals are logged at most once a minute per client
host); the stream limit; the message limit, enforced by gRPC's C core from a message's length
prefix before it buffers the body, and by default the largest request the bound functions accept
(`message_bounds`); the limit on bytes in flight (`max_bytes_in_flight`: the sizes of the
requests being decoded, queued or executed); then, per caller and before its rows join a batch,
the shapes and dtypes of the request (`batching`) and the method's optional validator of values
(`Server.bind`).

Memory: the server reads each client stream one request at a time (the next one once the
previous one is answered), and gRPC buffers at most a 64 KiB flow-control window of a stream that
is not being read (the server turns gRPC's growing windows off), so what clients can make the
server hold is bounded by about max_concurrent_streams x (2 x the receive limit + 64 KiB): a
request is held twice while gRPC hands it over. Requests past that step (decoded, waiting for
their batch or executed) are also capped by `max_bytes_in_flight`. bench/grpc_memory_probe.py
measures what oversized requests and streams that are not being read cost, against the former
settings (a 128 MiB receive limit, growing windows).

How serving ends tells the clients what to do next. `shutdown` alone (a preemption, a stop
request, a restart) answers callers with UNAVAILABLE: the server may come back, so actors
reconnect. `finish` (the learner spent its frame budget) answers them, every later call and every
Init with OUT_OF_RANGE and the message `errors.TRAINING_FINISHED`: the client raises
`TrainingFinishedError`, and actors stop.

Behaviour follows the original SEED RL op: see `batching` for batching, validation and fan-out,
`binding` for how a tf.function is analysed, `security` for TLS, token and refusal logging.
"""

import dataclasses
import itertools
import logging
import queue
import sys
import threading
import time
from concurrent import futures
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import grpc
import numpy as np
import tensorflow as tf

from seed_rl.grpc import batching
from seed_rl.grpc import binding
from seed_rl.grpc import call_refusals
from seed_rl.grpc import caller
from seed_rl.grpc import client as client_lib
from seed_rl.grpc import errors
from seed_rl.grpc import message_bounds
from seed_rl.grpc import security
from seed_rl.grpc import service_pb2
from seed_rl.shm import address as shm_address
from seed_rl.shm import listener as shm_listener

#: Cap of one message in a direction where a bound function's messages have no size bound
#: (strings, dimensions the signature leaves open), unless `max_message_length` is given.
DEFAULT_MAX_MESSAGE_LENGTH = client_lib.DEFAULT_MAX_MESSAGE_LENGTH
#: Default maximum number of open client streams (one per actor), i.e. of server threads.
DEFAULT_MAX_CONCURRENT_STREAMS = 1024

#: Default cap on the bytes of requests held at once (decoded, queued or executed): an eighth of
#: the memory of the machine (or of its container, when that limit is lower).
DEFAULT_MAX_BYTES_IN_FLIGHT = message_bounds.default_max_bytes_in_flight()

_SERVICE = 'seed_rl.TensorService'
_SHUTDOWN_MESSAGE = 'Server shutdown: the server closed while the call was pending'
_GRACE_SECONDS = 0.1
_SHUTDOWN_POLL_SECONDS = 0.005
# Seconds between two looks at the open streams while `wait_for_clients_to_leave` waits.
_LEAVE_POLL_SECONDS = 0.01
# Pool threads beyond max_concurrent_streams: they answer Init and refuse extra streams clearly.
_SPARE_THREADS = 16
_UNAUTHENTICATED_MESSAGE = ('Missing or wrong seed_rl token: this server serves only the clients '
                            'that present its token')

_GRPC_STATUS = {code.value[0]: code for code in grpc.StatusCode}

_log = logging.getLogger(__name__)


class _BadRequest:
  """Stands for a request whose bytes are not a CallRequest (so the stream survives)."""

  def __init__(self, reason: str):
    self.reason = reason


def _parse_call_request(data: bytes) -> Any:
  """The CallRequest in `data`, or a `_BadRequest` (called only for authenticated callers)."""
  try:
    return service_pb2.CallRequest.FromString(data)
  except Exception as e:  # pylint: disable=broad-except
    return _BadRequest(str(e) or type(e).__name__)


def _parse_init_request(data: bytes) -> Optional[str]:
  """None if `data` is an InitRequest, else why not (called only for authenticated callers)."""
  try:
    service_pb2.InitRequest.FromString(data)
  except Exception as e:  # pylint: disable=broad-except
    return str(e) or type(e).__name__
  return None


class _Method:
  """A bound name: its analysed functions (round robin) and the spec the batcher uses."""

  def __init__(self, bound: binding.BoundFunction, validate: Optional[batching.Validator]):
    self.bound = [bound]
    self.spec = batching.MethodSpec(bound.name, bound.args, bound.output_codes,
                                    bound.batch_size, [bound.runner], validate)

  def add(self, bound: binding.BoundFunction) -> None:
    first = self.bound[0]
    if (bound.args != first.args or bound.output_codes != first.output_codes or
        bound.output_structure != first.output_structure or
        bound.batch_size != first.batch_size):
      raise ValueError(f'Functions bound under the name {bound.name!r} must have the same input '
                       'signature and outputs.')
    self.bound.append(bound)
    self.spec.runners.append(bound.runner)


class _DaemonThreadPool(futures.Executor):
  """A thread pool of daemon threads, created on demand up to `max_workers`.

  concurrent.futures.ThreadPoolExecutor joins its (non-daemon) threads at interpreter exit, so a
  bound function blocked forever would hang the process's exit.
  """

  def __init__(self, max_workers: int, name: str):
    self._max_workers = max_workers
    self._name = name
    self._work: queue.SimpleQueue = queue.SimpleQueue()
    self._idle = threading.Semaphore(0)
    self._lock = threading.Lock()
    self._threads: List[threading.Thread] = []
    self._shut_down = False

  def submit(self, fn, /, *args, **kwargs) -> futures.Future:
    future = futures.Future()
    with self._lock:
      if self._shut_down:
        raise RuntimeError('cannot schedule new futures after shutdown')
      self._work.put((future, fn, args, kwargs))
      if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
        thread = threading.Thread(target=self._run, daemon=True,
                                  name=f'{self._name}_{len(self._threads)}')
        self._threads.append(thread)
        thread.start()
    return future

  def _run(self) -> None:
    while True:
      item = self._work.get()
      if item is None:
        return
      future, fn, args, kwargs = item
      if future.set_running_or_notify_cancel():
        try:
          result = fn(*args, **kwargs)
        except BaseException as e:  # pylint: disable=broad-except
          future.set_exception(e)
        else:
          future.set_result(result)
      del item, future, fn, args, kwargs
      self._idle.release()

  def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
    del cancel_futures
    with self._lock:
      self._shut_down = True
      threads = list(self._threads)
    for _ in threads:
      self._work.put(None)
    if wait:
      for t in threads:
        t.join()

  @property
  def num_threads(self) -> int:
    return len(self._threads)


class _Run:
  """One run of the server (start() to shutdown()): grpc server, thread pool and batchers."""

  def __init__(self, addresses: Sequence[str], methods: Dict[str, _Method], options,
               credentials, token: Optional[bytes], max_concurrent_streams: int,
               max_bytes_in_flight: Optional[int]):
    self._methods = methods
    self.options = options
    self._token = token
    self._batchers: Dict[str, batching.MethodBatcher] = {}
    self._batcher_list: Sequence[batching.MethodBatcher] = ()  # The same, for the hot path.
    self._batchers_lock = threading.Lock()
    # Once `finish` or `stop` sets it, every call gets this status instead of being served.
    self._end_status: Optional[Tuple[int, str]] = None
    self._end_response: Optional[bytes] = None
    self.finished = False  # Whether `finish` was called.
    self._running = 0  # Executions in flight.
    self._running_lock = threading.Lock()
    self._max_streams = max_concurrent_streams
    self._max_bytes = max_bytes_in_flight
    self._limits_lock = threading.Lock()
    self._streams = 0  # Authenticated Call streams open.
    self.bytes_in_flight = 0  # Sizes of the requests being decoded, queued or executed.
    self._refused_token = security.RefusalLog(_log, 'without the right token')
    self._refused_bytes = security.RefusalLog(
        _log, f'over the limit on bytes in flight (max_bytes_in_flight={max_bytes_in_flight})')
    self._refused_streams = security.RefusalLog(
        _log, f'over the stream limit (max_concurrent_streams={max_concurrent_streams})')
    # No request deserializers: the handlers check the token before they decode anything, and
    # see each request's size for the limit on bytes in flight.
    self.pool = _DaemonThreadPool(max_concurrent_streams + _SPARE_THREADS, 'seed_rl_grpc')
    self._server = grpc.server(
        self.pool, options=options,
        maximum_concurrent_rpcs=max_concurrent_streams + _SPARE_THREADS,
        handlers=[grpc.method_handlers_generic_handler(_SERVICE, {
            'Init': grpc.unary_unary_rpc_method_handler(
                self._init, request_deserializer=None,
                response_serializer=service_pb2.InitResponse.SerializeToString),
            'Call': grpc.stream_stream_rpc_method_handler(
                self._call, request_deserializer=None, response_serializer=None),
        })])
    self.ports: List[int] = []
    self._listeners: List[shm_listener.Listener] = []
    limits = dict(options)
    for address in addresses:
      try:
        if shm_address.is_shm_address(address):
          self._listeners.append(shm_listener.Listener(
              address, self, limits['grpc.max_receive_message_length'],
              limits['grpc.max_send_message_length']))
          port = 0
        elif credentials is None:
          port = self._server.add_insecure_port(address)
        else:
          port = self._server.add_secure_port(address, credentials)
      except Exception as e:  # pylint: disable=broad-except
        port, reason = 0, str(e)
      else:
        reason = 'port 0 returned'
        if shm_address.is_shm_address(address):
          self.ports.append(0)  # No port: the address names a shared-memory listener.
          continue
      if not port:
        for listener in self._listeners:
          listener.stop(0)
        self._server.stop(None)
        self.pool.shutdown(wait=False)
        raise tf.errors.UnavailableError(None, None,
                                         f'Could not listen on address {address!r}: {reason}')
      self.ports.append(port)

  def start(self) -> None:
    self._server.start()

  def _end(self, code: int, message: str) -> None:
    """From now on every call gets the status (code, message); so do the waiting callers."""
    self._end_status = (code, message)
    self._end_response = batching.error_response(code, message)
    self._fail_pending()

  def finish(self) -> None:
    """Answers every call, waiting or to come, and every Init with the training-finished status;
    so do executions that end from now on, instead of their results."""
    self._end(errors.OUT_OF_RANGE, errors.TRAINING_FINISHED)
    # Last: executions that see it hand out the response `_end` has set.
    self.finished = True

  def wait_for_clients_to_leave(self, timeout: float) -> bool:
    """Waits up to `timeout` seconds until no client stream is open; True if none is."""
    deadline = time.monotonic() + timeout
    while self._streams and time.monotonic() < deadline:
      if self._end_status is not None:
        self._fail_pending()  # A call that slipped in as the run ended must not wait for rows.
      time.sleep(_LEAVE_POLL_SECONDS)
    return not self._streams

  def stop(self, timeout: float) -> None:
    """Answers waiting callers with UNAVAILABLE (after `finish`: with its status), closes every
    stream, waits for executions."""
    if self._end_status is None:
      self._end(errors.UNAVAILABLE, _SHUTDOWN_MESSAGE)
    else:
      self._fail_pending()
    self._server.stop(_GRACE_SECONDS).wait()
    for listener in self._listeners:
      listener.stop(_GRACE_SECONDS)
    self._fail_pending()  # Calls that slipped in while closing must not park a thread forever.
    deadline = time.monotonic() + timeout
    while self._running and time.monotonic() < deadline:
      time.sleep(_SHUTDOWN_POLL_SECONDS)  # Polled: no notification on the serving path.
    if self._running:
      _log.warning('seed_rl.grpc: bound functions still running %.1f s after shutdown; '
                   'their results are dropped.', timeout)
    self.pool.shutdown(wait=False)
    for refusals in (self._refused_token, self._refused_streams, self._refused_bytes):
      refusals.flush()

  def pending_batches(self, min_waiting_secs: float) -> List[batching.PendingBatch]:
    with self._batchers_lock:
      batchers = list(self._batchers.values())
    running = self._running
    pending = [batcher.pending(min_waiting_secs) for batcher in batchers]
    return [dataclasses.replace(p, executions_in_flight=running) for p in pending
            if p is not None]

  def _fail_pending(self) -> None:
    with self._batchers_lock:
      batchers = list(self._batchers.values())
    for batcher in batchers:
      batcher.fail_pending(*self._end_status)

  # --- handlers (pool threads) ----------------------------------------------------------------

  def _execute(self, job: batching.Job) -> None:
    """Runs a job on this thread and hands every caller its response."""
    with self._running_lock:
      self._running += 1
    try:
      results = job.run()
    finally:
      with self._running_lock:
        self._running -= 1
    if self.finished:
      results = [(slot, self._end_response) for slot, _ in results]
    for slot, payload in results:
      slot.set_result(payload)

  def _batcher(self, name: str) -> Optional[batching.MethodBatcher]:
    batcher = self._batchers.get(name)
    if batcher is None:
      method = self._methods.get(name)
      if method is None:
        return None
      with self._batchers_lock:
        batcher = self._batchers.get(name)
        if batcher is None:
          batcher = self._batchers[name] = batching.MethodBatcher(method.spec, self._execute)
          self._batcher_list = tuple(self._batchers.values())
    return batcher

  def _authorize(self, context) -> None:
    """Aborts the RPC with UNAUTHENTICATED unless its metadata presents the token.

    Looks at the metadata only: a refused request's body is never decoded, and the refusal is
    counted, not logged per call (`security.RefusalLog`). `context.abort` makes grpcio answer
    without logging anything either.
    """
    if self._token is not None and not security.has_token(context.invocation_metadata(),
                                                          self._token):
      self._refused_token.record(context.peer())
      context.abort(grpc.StatusCode.UNAUTHENTICATED, _UNAUTHENTICATED_MESSAGE)

  def _streams_message(self) -> str:
    return (f'Too many client streams: the server already serves {self._streams}, its limit '
            f'(Server(..., max_concurrent_streams={self._max_streams})); each actor holds one')

  def _init(self, data: bytes, context) -> service_pb2.InitResponse:
    """Returns the output signatures; refuses a client that could not open its stream."""
    self._authorize(context)
    refusal = self._init_refusal(context.peer())
    if refusal is not None:
      context.abort(_GRPC_STATUS[refusal[0]], refusal[1])
    reason = _parse_init_request(data)
    if reason is not None:
      context.abort(grpc.StatusCode.INVALID_ARGUMENT, f'Cannot parse InitRequest: {reason}')
    return self._init_response()

  def _init_refusal(self, peer: str) -> Optional[Tuple[int, str]]:
    """The status (code, message) that refuses an authenticated client's Init, if any: after
    `finish`, or when it could not open its stream."""
    if self.finished:
      return errors.OUT_OF_RANGE, errors.TRAINING_FINISHED
    if self._streams >= self._max_streams:
      self._refused_streams.record(peer)
      return errors.RESOURCE_EXHAUSTED, self._streams_message()
    return None

  def _init_response(self) -> service_pb2.InitResponse:
    return service_pb2.InitResponse(method_output_signature=[
        service_pb2.MethodOutputSignature(name=name, output_signature=m.bound[0].output_structure)
        for name, m in list(self._methods.items())])

  # --- shared-memory connections (`seed_rl.shm.listener.Handler`) -------------------------------

  def shm_welcome(self, token: Optional[bytes], peer: str) -> Tuple[int, str, bytes]:
    """A shared-memory connection's Init, with gRPC's checks: (0, '', InitResponse bytes), or
    the status of its refusal."""
    if self._token is not None and not security.has_token(security.token_metadata(token),
                                                          self._token):
      self._refused_token.record(peer)
      return errors.UNAUTHENTICATED, _UNAUTHENTICATED_MESSAGE, b''
    refusal = self._init_refusal(peer)
    if refusal is not None:
      return refusal + (b'',)
    return errors.OK, '', self._init_response().SerializeToString()

  def shm_serve(self, requests: Iterator[bytes], peer: str,
                max_response_bytes: int) -> Iterator[bytes]:
    """The responses to a shared-memory connection, a stream from its first request on (as a
    gRPC client opens its stream with its first call): beyond the stream limit that request is
    refused and the connection ends. A response larger than the response area is refused as
    gRPC refuses one over its send limit."""
    first = next(requests, None)
    if first is None:
      return
    message = self._admit_stream(peer)
    if message is not None:
      yield batching.error_response(errors.RESOURCE_EXHAUSTED, message)
      return
    for response in self._serve(itertools.chain((first,), requests), peer):
      if len(response) > max_response_bytes:
        response = batching.error_response(
            errors.RESOURCE_EXHAUSTED, f'Sent message larger than max ({len(response)} vs. '
            f'{max_response_bytes})')
      yield response

  def _admit_stream(self, peer: str) -> Optional[str]:
    """Counts an authenticated stream; beyond the limit, the message of its refusal instead."""
    with self._limits_lock:
      if self._streams < self._max_streams:
        self._streams += 1
        return None
      message = self._streams_message()
    self._refused_streams.record(peer)
    return message

  def _close_stream(self) -> None:
    with self._limits_lock:
      self._streams -= 1

  def _call(self, request_iterator, context):
    """One client stream: one response per request, in order.

    Each request's bytes count against `max_bytes_in_flight` until its response is ready
    (counted here, without a call per request: this loop runs for every actor step).
    """
    self._authorize(context)
    message = self._admit_stream(context.peer())
    if message is not None:
      context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
    yield from self._serve(request_iterator, context.peer())

  def _serve(self, requests: Iterator[bytes], peer: str) -> Iterator[bytes]:
    """The responses to the requests of one admitted stream (of either transport), in order;
    the stream is counted until this ends."""
    stream = caller.open_stream(peer)  # What validators see as `caller.current()`.
    limit = self._max_bytes
    limits_lock = self._limits_lock
    try:
      for data in requests:
        size = len(data)
        with limits_lock:
          held = self.bytes_in_flight
          admitted = limit is None or held + size <= limit
          if admitted:
            self.bytes_in_flight = held + size
        if not admitted:
          yield self._refusal(size, held, peer)
          continue
        try:
          response = self._dispatch(data)
          data = None
        finally:
          with limits_lock:
            self.bytes_in_flight -= size
        yield response
    finally:
      caller.close_stream(stream)
      self._close_stream()

  def _refusal(self, size: int, held: int, peer: str) -> bytes:
    """The error response to a request of `size` bytes that would pass the limit on bytes in
    flight while `held` bytes are."""
    limit = self._max_bytes
    self._refused_bytes.record(peer)
    if size > limit:
      message = (f'Request of {size} bytes refused: it is larger than the server\'s limit on the '
                 f'bytes of requests in flight, {limit} bytes '
                 f'(Server(..., max_bytes_in_flight={limit}))')
    else:
      message = (f'Request of {size} bytes refused: the server already holds {held} bytes of '
                 f'requests in flight and its limit is {limit} bytes '
                 f'(Server(..., max_bytes_in_flight={limit})); '
                 f'{call_refusals.RETRY_LATER}, or raise the limit')
    return batching.error_response(errors.RESOURCE_EXHAUSTED, message)

  def _dispatch(self, data: bytes) -> bytes:
    """The response to the request in `data`: read as laid out like a request served before
    when it is (`MethodBatcher.call_known`), else parsed."""
    if self._end_response is not None:
      return self._end_response
    function = batcher = None
    try:
      for batcher in self._batcher_list:
        response = batcher.call_known(data)
        if response is not None:
          return response
      batcher = None
      request = _parse_call_request(data)
      if isinstance(request, _BadRequest):
        return batching.error_response(errors.INVALID_ARGUMENT,
                                       f'Cannot parse CallRequest: {request.reason}')
      function = request.function
      batcher = self._batcher(function)
      if batcher is None:
        return batching.error_response(errors.INTERNAL, f'Function {function} not found')
      return batcher.call(request, data)
    except Exception as e:  # pylint: disable=broad-except
      # A bug here must not end the stream (the client would see UNAVAILABLE).
      if function is None and batcher is not None:
        function = batcher.name
      _log.exception('seed_rl.grpc: unexpected error while serving %s', function)
      return batching.error_response(errors.INTERNAL,
                                     f'{type(e).__name__} while serving {function}: {e}')


class Server:
  """Serves bound tf.functions to `Client`s; batches calls on the server side.

  Usage (learner):
    server = grpc.Server(['[::]:8686'])
    server.bind(inference)           # tf.function with input_signature, or a list of them
    server.start()
    ...
    server.shutdown()

  Args:
    server_addresses: list of addresses to listen on: 'host:port', '[::]:port', 'unix:/path'
      (gRPC), 'shm:NAME' (shared memory, for clients on this machine; NAME is letters, digits,
      '_', '-', '.'). Port 0 picks a free port (see `ports`; 0 for a 'shm:' address). The
      message limits size each shared-memory connection's request and response areas (memory
      is taken only as it is written).
    max_message_length: cap in bytes on one request and on one response; a larger request is
      refused by gRPC from its length prefix, before its body is buffered: the client gets
      RESOURCE_EXHAUSTED ("Received message larger than max (SIZE vs. LIMIT)") and its stream
      ends. None (the default) sizes each direction to the bound functions, when `start` is
      called: the largest request they accept (a direct call of a full batch) plus
      `message_bounds.MARGIN`, and likewise the largest response; `DEFAULT_MAX_MESSAGE_LENGTH`
      (128 MiB) for a direction where a function takes or returns strings or dimensions its
      signature leaves open. A value given here wins over the sized default, in both directions.
    tls_certificate_chain: PEM certificate chain; with `tls_private_key`, serve over TLS.
    tls_private_key: PEM private key of the certificate.
    token: shared secret (bytes); if set, calls that do not present it get UNAUTHENTICATED and
      never reach a bound function. The token is checked from the call metadata before anything
      of the request is decoded; refused calls are logged at most once a minute per client host.
      TLS alone authenticates only the server: without a token, anyone who can reach the port is
      served.
    max_concurrent_streams: the most client streams (actors) served at once, default 1024; each
      open stream holds one server thread. A client beyond it is refused with RESOURCE_EXHAUSTED
      (at Init, or when it opens its stream) and a message that names this keyword.
    max_bytes_in_flight: cap on the summed sizes of the requests being decoded, queued for a
      batch or executed; default an eighth of the machine's memory (`DEFAULT_MAX_BYTES_IN_FLIGHT`,
      the container's limit when lower); None for no cap. A request that would go beyond it gets
      RESOURCE_EXHAUSTED (its stream stays open) with a message that names this keyword. Each
      actor's request waits in a batch until the batch is full, so the cap must exceed (number
      of actors) x (bytes of one actor's request); e.g. 1024 actors sending 16 Atari
      observations of 84x84x4 (1 MiB) each need 1 GiB.
    shutdown_timeout: seconds `shutdown` waits for executions still running.
    options: extra gRPC server options, as (key, value) pairs; they override the defaults (the
      message limits; `('grpc.http2.bdp_probe', 0)`, which keeps the flow-control window of a
      stream that is not being read at 64 KiB; `('grpc.so_reuseport', 0)`). E.g.
      `[('grpc.http2.bdp_probe', 1)]` lets gRPC grow the window of a stream that is not read
      (faster large requests over long links, up to about 4 MiB more memory per stream).
  Raises:
    ValueError: not in eager mode, inconsistent TLS arguments, or a limit below 1.
    tf.errors.InvalidArgumentError: `server_addresses` is not a list of strings.
  """

  def __init__(self, server_addresses: Sequence[str], *,
               max_message_length: Optional[int] = None,
               tls_certificate_chain: Optional[bytes] = None,
               tls_private_key: Optional[bytes] = None,
               token: Optional[bytes] = None,
               max_concurrent_streams: int = DEFAULT_MAX_CONCURRENT_STREAMS,
               max_bytes_in_flight: Optional[int] = DEFAULT_MAX_BYTES_IN_FLIGHT,
               shutdown_timeout: float = 5.0,
               options: Sequence[Tuple[str, Any]] = ()):
    if not tf.executing_eagerly():
      raise ValueError('Only eager mode is currently supported.')
    if (isinstance(server_addresses, (str, bytes)) or
        not isinstance(server_addresses, (list, tuple)) or
        not all(isinstance(a, str) for a in server_addresses)):
      raise tf.errors.InvalidArgumentError(
          None, None, f'server_addresses must be a vector of strings, got {server_addresses!r}')
    if not server_addresses:
      raise tf.errors.InvalidArgumentError(None, None, 'server_addresses must not be empty')
    if max_concurrent_streams < 1:
      raise ValueError(
          f'max_concurrent_streams must be at least 1, got {max_concurrent_streams}.')
    for name, value in (('max_bytes_in_flight', max_bytes_in_flight),
                        ('max_message_length', max_message_length)):
      if value is not None and value < 1:
        raise ValueError(f'{name} must be at least 1 (or None), got {value}.')
    self._addresses = list(server_addresses)
    self._credentials = security.server_credentials(tls_certificate_chain, tls_private_key)
    self._token = security.check_token(token)
    self._max_message_length = None if max_message_length is None else int(max_message_length)
    self._extra_options = dict(options)
    self._max_concurrent_streams = max_concurrent_streams
    self._max_bytes_in_flight = max_bytes_in_flight
    self._shutdown_timeout = shutdown_timeout
    self._methods: Dict[str, _Method] = {}
    self._cpu_device = binding.cpu_device_name()
    self._run: Optional[_Run] = None
    self._finished = False
    self._lock = threading.Lock()

  def bind(self, fn: Any,
           validate: Optional[Callable[[List[np.ndarray]], None]] = None) -> None:
    """Binds a tf.function, or a list of them served round robin per batch under one name.

    The name on the wire is the Python function's `__name__`. Each function needs an
    input_signature; it is batched, as in the original, if all inputs share a leading dimension N
    that the outputs keep (`batching.detect_batch_size`).

    Bind before `start`: the default message limits are sized to the functions bound when the
    server starts (a function bound later gets a warning if its messages may be larger).

    `validate`, if given, checks the values of every request on its own, before its rows join a
    batch, so that one bad caller (e.g. an env id out of range) is refused alone instead of making
    the bound function fail for every caller of the batch. It is called as `validate(arrays)`
    with the request's arguments flattened in input-signature order (`tf.nest.flatten`), as
    read-only numpy views of the received bytes (strings: object arrays of bytes) shaped as the
    caller sent them: `(rows,) + row shape` for a block of rows, the row shape alone for a
    single element, the full shape for a direct call. Shapes and dtypes are already checked
    against the signature. It runs once per request, on the caller's handler thread, after the
    checks of shapes and dtypes and without any lock held (several run at once: it must be
    thread-safe; a slow one delays only its own caller). It applies to direct (full-batch or
    unbatched) calls too. There, `seed_rl.grpc.caller.current()` is the client stream of the
    request, so that a validator can tell callers apart and see when one has gone.
    - Raising `ValueError(msg)` refuses that caller alone: it gets INVALID_ARGUMENT with `msg`
      (`seed_rl.grpc.InvalidArgumentError`, or `tf.errors.InvalidArgumentError` when TensorFlow
      is loaded in the client), and the batch runs for the other callers.
    - Any other exception is a bug of the validator: that caller gets INTERNAL, and the traceback
      is logged once per exception type (logger `seed_rl.grpc.batching`).

    Args:
      fn: a tf.function with input_signature, or a list of them (same signature and outputs).
      validate: optional `validate(arrays: List[np.ndarray]) -> None`, for every function bound
        under this name.
    Raises:
      ValueError: a function has no input_signature, or unsupported inputs/outputs.
      TypeError: `validate` is not callable.
      tf.errors.InvalidArgumentError: the name is already bound.
    """
    if validate is not None and not callable(validate):
      raise TypeError(f'validate must be callable or None, got {type(validate).__name__}.')
    fns = [fn] if callable(fn) else list(fn)
    with self._lock:
      for i, f in enumerate(fns):
        bound = binding.bind_function(f, self._cpu_device)
        method = self._methods.get(bound.name)
        if method is None:
          self._methods[bound.name] = _Method(bound, validate)
        elif i == 0:
          raise tf.errors.InvalidArgumentError(
              None, None, f"Function '{bound.name}' was bound twice.")
        else:
          method.add(bound)
      run = self._run
    if run is not None and self._options() != run.options:
      _log.warning('seed_rl.grpc: %s was bound while the server runs, with message limits sized '
                   'when it started: its larger requests or responses are refused until the '
                   'server restarts (shutdown, then start). Bind before start, or pass '
                   'max_message_length.', bound.name)

  def start(self) -> None:
    """Starts serving (returns once listening). A server that `finish` ended serves only its
    status, and needs no bound function.

    Raises:
      tf.errors.UnavailableError: nothing bound, or an address cannot be listened on.
      tf.errors.InvalidArgumentError: already started.
    """
    with self._lock:
      if self._run is not None:
        raise tf.errors.InvalidArgumentError(None, None, 'Server is already started')
      if not self._methods and not self._finished:
        raise tf.errors.UnavailableError(None, None, 'No function was bound')
      run = _Run(self._addresses, self._methods, self._options(), self._credentials,
                 self._token, self._max_concurrent_streams, self._max_bytes_in_flight)
      if self._finished:
        run.finish()
      run.start()
      self._run = run
    grpc_ports = [(a, p) for a, p in zip(self._addresses, run.ports)
                  if not shm_address.is_shm_address(a)]  # Shared memory: this machine only.
    security.warn_if_open([a for a, _ in grpc_ports], [p for _, p in grpc_ports],
                          self._token is not None, self._credentials is not None, _log)

  def _options(self) -> List[Tuple[str, Any]]:
    """gRPC options of a run: the message limits (see `max_message_length`), a stream window
    that does not grow, no port sharing, then the caller's `options`."""
    receive = send = self._max_message_length
    if receive is None:
      bound = [method.bound[0] for method in self._methods.values()]
      receive = message_bounds.max_message_bytes(
          [message_bounds.request_bytes(b.name, b.args) for b in bound],
          DEFAULT_MAX_MESSAGE_LENGTH)
      send = message_bounds.max_message_bytes(
          [message_bounds.response_bytes(b.output_codes, b.output_shapes, b.batch_size)
           for b in bound], DEFAULT_MAX_MESSAGE_LENGTH)
    defaults = {
        'grpc.max_receive_message_length': receive,
        'grpc.max_send_message_length': send,
        # gRPC's bandwidth-delay probing grows the flow-control window of a stream whose handler
        # is not reading (a caller waiting for its batch) to about 4 MiB, which a client fills
        # with its next request; without it the window stays at 64 KiB. A request being read
        # still gets a window of its own size.
        'grpc.http2.bdp_probe': 0,
        # Without this, two servers could silently share a TCP port on Linux.
        'grpc.so_reuseport': 0,
    }
    return list({**defaults, **self._extra_options}.items())

  def pending_batches(self, min_waiting_secs: float = 0.) -> List[batching.PendingBatch]:
    """The partially filled batches of the running server (none when it is not running).

    A starvation watchdog for the server's owner: a batched method runs only full batches, so
    callers whose batch never fills (fewer clients than the batch needs) wait forever without a
    word. Poll this (e.g. every few seconds from a logging thread) and warn about a batch whose
    `waiting_secs` keeps growing. Thread-safe, and it costs the serving path nothing: each
    batch records when its first rows arrived, and this takes each batcher's lock briefly. The
    waiting rows are copied (`PendingBatch.inputs`, e.g. to say which clients called) only for
    batches that have waited at least `min_waiting_secs`.
    """
    run = self._run
    return run.pending_batches(min_waiting_secs) if run is not None else []

  @property
  def ports(self) -> List[int]:
    """The port bound for each address of the running server (useful with port 0)."""
    run = self._run
    return list(run.ports) if run is not None else []

  def finish(self) -> None:
    """Tells every client that the server's work is done for good (the learner finished
    training), where `shutdown` alone tells them that the server went away and may come back.

    From now on callers waiting for a batch, calls whose execution ends (instead of their
    results), every later call and every client's Init get OUT_OF_RANGE with the message
    `errors.TRAINING_FINISHED`; the client raises `TrainingFinishedError`, on which actors stop.
    This lasts for the life of the server, through `shutdown` and `start` (which then serves that
    status alone, bound functions or not). Call `wait_for_clients_to_leave` before `shutdown`
    so that clients between two calls (e.g. stepping their environments) hear it too: `shutdown`
    closes their streams, and a client whose stream closes reconnects. Thread-safe.
    """
    with self._lock:
      self._finished = True
      run = self._run
    if run is not None:
      run.finish()

  def wait_for_clients_to_leave(self, timeout: float) -> bool:
    """Waits up to `timeout` seconds until no client holds a stream open (e.g. after `finish`,
    until every actor heard of it and went); True if none does. True at once when the server
    is not running."""
    run = self._run
    return run.wait_for_clients_to_leave(timeout) if run is not None else True

  def shutdown(self) -> None:
    """Stops serving; bindings are kept, so `start` may be called again.

    Callers waiting for a batch get UNAVAILABLE ("server closed"; after `finish`, its status),
    every stream is closed (clients then get UNAVAILABLE), and this waits up to
    `shutdown_timeout` seconds for executions still running; their results are dropped. Running
    executions are not interrupted: TensorFlow's Python cancellation context is process-global
    and cannot be scoped to this server's threads, so a bound function blocked on, e.g., a full
    queue must be released by its owner (close the queue). Does nothing if the server is not
    running.
    """
    with self._lock:
      run, self._run = self._run, None
    if run is not None:
      run.stop(self._shutdown_timeout)

  def __del__(self):
    """Stops a dropped server; not at interpreter exit, where stopping would hang.

    grpcio's stop starts a thread, and a thread started while the interpreter finalizes never
    runs: a script that ended without `shutdown` would hang forever instead of exiting.
    """
    if sys.is_finalizing():
      return
    try:
      self.shutdown()
    except Exception:  # pylint: disable=broad-except
      pass
