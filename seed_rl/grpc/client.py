"""The actor-side client of the central-inference server: numpy and grpcio only.

Two transports carry the same bytes: gRPC (`host:port`, `unix:/path`), and shared memory
(`shm:NAME`, `seed_rl.shm`) for actors on the learner's machine.

Importing or using this module never imports TensorFlow (an actor saves its memory and import
time). Errors are raised as the `tf.errors` class of the status code when TensorFlow is already
loaded in the process (as the original client did), else as the `seed_rl.grpc.errors` class of the
same name.

One client holds one bidirectional stream and has at most one call in flight (a lock serializes
concurrent callers), exactly like the original op. Use one client per concurrently calling thread.
`close` ends a call in flight in another thread.
"""

import queue
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc

from seed_rl.grpc import codec
from seed_rl.grpc import errors
from seed_rl.grpc import message_layout
from seed_rl.grpc import security
from seed_rl.grpc import service_pb2
from seed_rl.grpc import wire
from seed_rl.shm import address as shm_address
from seed_rl.shm import connection as shm_connection

#: Default cap of one message in either direction (the server uses the same default).
DEFAULT_MAX_MESSAGE_LENGTH = 128 * 1024 * 1024
_RECONNECT_BACKOFF_MS = 500

_INIT_METHOD = '/seed_rl.TensorService/Init'
_CALL_METHOD = '/seed_rl.TensorService/Call'
_END = object()
_STREAM_CLOSED_MESSAGE = 'Read failed, is the server closed?'
# Response layouts a client remembers (one per method and response size in the common case).
_MAX_RESPONSE_LAYOUTS = 64

# Stream-level statuses that mean "the server went away".
_SERVER_GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def _status_code(code: grpc.StatusCode) -> int:
  return code.value[0]


def _rpc_error(e: grpc.RpcError, context: str) -> Exception:
  """Converts a grpc.RpcError of the stream or of Init into our/TF error classes."""
  code = e.code() if hasattr(e, 'code') else grpc.StatusCode.UNKNOWN
  details = (e.details() if hasattr(e, 'details') else None) or str(e)
  if code in _SERVER_GONE:
    return errors.make_error(errors.UNAVAILABLE, f'{context} ({code.name}: {details})')
  return errors.make_error(_status_code(code), f'{details} ({context})')


class _Stream:
  """One open Call stream: requests go through a queue that grpcio's sender thread drains."""

  def __init__(self, call_fn, metadata):
    self.requests: queue.SimpleQueue = queue.SimpleQueue()
    self.responses = call_fn(iter(self.requests.get, _END), metadata=metadata)

  def close(self) -> None:
    self.requests.put(_END)
    self.responses.cancel()


class _GrpcTransport:
  """gRPC's carriage of a client: a channel, Init, and one Call stream opened on first use and
  again after it broke. `exchange` runs under the client's lock; `interrupt` may run outside it."""

  def __init__(self, server_address: str, timeout: Optional[float], metadata,
               credentials, channel_options):
    self._metadata = metadata
    self._stream: Optional[_Stream] = None
    if credentials is None:
      self._channel = grpc.insecure_channel(server_address, options=channel_options)
    else:
      self._channel = grpc.secure_channel(server_address, credentials, options=channel_options)
    try:
      init = self._channel.unary_unary(
          _INIT_METHOD, request_serializer=service_pb2.InitRequest.SerializeToString,
          response_deserializer=service_pb2.InitResponse.FromString)
      try:
        self.init_response = init(service_pb2.InitRequest(), timeout=timeout,
                                  wait_for_ready=True, metadata=metadata)
      except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
          raise errors.make_error(
              errors.UNAVAILABLE, f'Server at {server_address} is not reachable: no answer '
              f'within {timeout} s ({e.details()})') from None
        raise _rpc_error(e, f'Init of the client of {server_address} failed') from None
      # Responses arrive as bytes: most are read without parsing (`Client._method`).
      self._call_fn = self._channel.stream_stream(
          _CALL_METHOD, request_serializer=None, response_deserializer=None)
    except BaseException:
      self._channel.close()
      raise

  def exchange(self, request: bytes) -> bytes:
    stream = self._stream
    if stream is None:
      stream = self._stream = _Stream(self._call_fn, self._metadata)
    stream.requests.put(request)
    try:
      return next(stream.responses)
    except grpc.RpcError as e:
      self._drop_stream(stream)
      raise _rpc_error(e, _STREAM_CLOSED_MESSAGE) from None
    except StopIteration:
      self._drop_stream(stream)
      raise errors.make_error(errors.UNAVAILABLE, _STREAM_CLOSED_MESSAGE) from None

  def _drop_stream(self, stream: _Stream) -> None:
    """Forgets a broken stream; the next call opens a new one."""
    stream.close()
    if self._stream is stream:
      self._stream = None

  def interrupt(self) -> None:
    """Ends the call in flight in another thread, if any (it gets UNAVAILABLE)."""
    stream = self._stream
    if stream is not None:
      stream.close()

  def close(self) -> None:
    stream, self._stream = self._stream, None
    if stream is not None:
      stream.close()
    self._channel.close()


class _ShmTransport:
  """The shared-memory carriage of a client of 'shm:NAME' (`seed_rl.shm`), for actors on the
  learner's machine: the same bytes as gRPC's, through a segment shared with the server. A
  connection that ended is made again on the next call (one attempt, as a gRPC stream is
  opened again), so that a restarted server is found as over gRPC."""

  def __init__(self, server_address: str, timeout: Optional[float], token: Optional[bytes]):
    self._address = server_address
    self._token = token
    self._connection: Optional[shm_connection.Connection] = self._connect(timeout)
    self.init_response = _parse_init(self._connection.init_response, server_address)

  def _connect(self, timeout: Optional[float]) -> shm_connection.Connection:
    try:
      return shm_connection.Connection(self._address, timeout, self._token)
    except shm_address.AddressError as e:
      raise errors.make_error(errors.INVALID_ARGUMENT, str(e)) from None
    except shm_connection.Unreachable as e:
      raise errors.make_error(errors.UNAVAILABLE, str(e)) from None
    except shm_connection.Refused as e:  # As gRPC's refusal of Init reads.
      raise errors.make_error(
          e.code, f'{e.message} (Init of the client of {self._address} failed)') from None

  def exchange(self, request: bytes) -> bytes:
    connection = self._connection
    if connection is None:
      connection = self._connection = self._connect(0)
    try:
      return connection.exchange(request)
    except shm_connection.TooLarge as e:
      raise errors.make_error(errors.RESOURCE_EXHAUSTED, str(e)) from None
    except shm_connection.Unreachable:
      self._connection = None
      connection.close()
      raise errors.make_error(errors.UNAVAILABLE, _STREAM_CLOSED_MESSAGE) from None

  def interrupt(self) -> None:
    """Ends the call in flight in another thread, if any (it gets UNAVAILABLE)."""
    connection = self._connection
    if connection is not None:
      connection.interrupt()

  def close(self) -> None:
    connection, self._connection = self._connection, None
    if connection is not None:
      connection.close()


def _parse_init(data: bytes, server_address: str) -> service_pb2.InitResponse:
  try:
    return service_pb2.InitResponse.FromString(data)
  except Exception as e:  # pylint: disable=broad-except
    raise errors.make_error(errors.INTERNAL, f'Cannot parse the InitResponse of '
                            f'{server_address}: {e or type(e).__name__}') from None


def _channel_options(max_message_length: int, tls_server_name: Optional[str],
                     options: Sequence) -> List[Tuple[str, Any]]:
  """A client channel's options: the message limits and a fast reconnect, then `options`."""
  channel_options = {
      'grpc.max_send_message_length': int(max_message_length),
      'grpc.max_receive_message_length': int(max_message_length),
      # An actor started before its learner (or waiting for a restarted one) connects within
      # about 0.5 s of the learner serving: gRPC's default backoff starts at 1 s and grows to
      # 2 minutes between attempts. An attempt on a port nobody listens on costs nothing.
      'grpc.initial_reconnect_backoff_ms': _RECONNECT_BACKOFF_MS,
      'grpc.max_reconnect_backoff_ms': _RECONNECT_BACKOFF_MS,
  }
  if tls_server_name is not None:
    channel_options['grpc.ssl_target_name_override'] = tls_server_name
  channel_options.update(dict(options))
  return list(channel_options.items())


class Client:
  """Calls the functions bound on a `Server`: one Python method per bound name.

  `client.inference(env_ids, run_ids, env_output, raw_rewards)` flattens its arguments like
  `tf.nest.flatten` (nests of namedtuples, tuples, lists, dicts; numpy arrays, numpy and Python
  scalars, str/bytes), sends them, waits for the result and returns it packed in the structure the
  server announced: numpy arrays (0-d for scalars; read-only views of the received bytes; strings
  as object arrays of bytes) inside the same namedtuples/lists/dicts, None for a function returning
  None. Reading a method the server does not expose raises AttributeError.

  The constructor waits until the server is up (up to `timeout` seconds; None waits forever) and
  raises UnavailableError if it is not reachable in time.

  Args:
    server_address: 'host:port', '[::]:port' or 'unix:/path' (gRPC), or 'shm:NAME' (shared
      memory with a server on this machine: the TLS arguments, `max_message_length` and
      `options` do not apply; the server's limits do).
    timeout: seconds to wait for the server to come up; None waits forever.
    token: shared secret the server expects (see `security`).
    tls_root_certificates: PEM root CA that signed the server's certificate; enables TLS.
    use_tls: force TLS on (system roots when no CA is given) or off; None: TLS iff a CA is given.
    tls_server_name: name to check the server certificate against when it differs from the host
      part of the address (e.g. connecting by IP).
    max_message_length: cap in bytes on one request or response.
    options: extra grpc channel options, as (key, value) pairs; they override the defaults
      (message limits, a connection attempt every 0.5 s while the server is down).
  """

  def __init__(self, server_address: str, timeout: Optional[float] = None, *,
               token: Optional[bytes] = None,
               tls_root_certificates: Optional[bytes] = None,
               use_tls: Optional[bool] = None,
               tls_server_name: Optional[str] = None,
               max_message_length: int = DEFAULT_MAX_MESSAGE_LENGTH,
               options: Sequence = ()):
    if not isinstance(server_address, str):
      raise errors.make_error(errors.INVALID_ARGUMENT,
                              f'server_address must be a scalar string, got {server_address!r}')
    self._address = server_address
    self._lock = threading.Lock()
    self._closed = False
    token = security.check_token(token)
    try:
      if shm_address.is_shm_address(server_address):
        self._transport = _ShmTransport(server_address, timeout, token)
      else:
        self._transport = _GrpcTransport(
            server_address, timeout, security.token_metadata(token),
            security.channel_credentials(tls_root_certificates, use_tls),
            _channel_options(max_message_length, tls_server_name, options))
    except BaseException:
      self._closed = True
      raise
    self._response_layouts: Dict[Tuple[str, int], message_layout.MessageLayout] = {}
    self._methods: Dict[str, Tuple[Callable[..., Any], int]] = {
        sig.name: (codec.make_packer(sig.output_signature),
                   codec.count_leaves(sig.output_signature))
        for sig in self._transport.init_response.method_output_signature}

  # --- methods ------------------------------------------------------------------------------------

  def _method(self, name: str) -> Callable[..., Any]:
    """A callable for method `name`, made on each access: methods hold no reference cycle, so a
    client that is dropped (even `Client(address).foo(x)`) closes its channel at once. Keep the
    callable to call a method every step: it does the whole call in one Python frame but for
    the exchange on the stream."""
    pack, num_outputs = self._methods[name]
    layouts = self._response_layouts
    exchange = self._exchange

    def method(*args):
      try:
        request = wire.encode_call_request(name, codec.flatten(args))
      except codec.CodecError as e:
        raise errors.make_error(errors.INVALID_ARGUMENT, f'{name}: {e}') from None
      data = exchange(request)
      layout = layouts.get((name, len(data)))
      if layout is not None and layout.matches(data):
        return pack(iter(layout.arrays(data)))
      return pack(iter(self._read_response(name, data, num_outputs)))

    method.__name__ = name
    method.__doc__ = f'Calls {name!r} on {self._address}.'
    return method

  def __getattr__(self, name: str) -> Callable[..., Any]:
    methods = self.__dict__.get('_methods')
    if methods is not None and name in methods:
      return self._method(name)
    available = sorted(methods) if methods is not None else []
    raise AttributeError(f'The server at {self.__dict__.get("_address")} has no method {name!r} '
                         f'(it serves {available}).')

  def __dir__(self):
    return sorted(set(super().__dir__()) | set(self.__dict__.get('_methods', ())))

  @property
  def method_names(self) -> List[str]:
    """The names the server exposes, in bind order."""
    return list(self._methods)

  # --- calls --------------------------------------------------------------------------------------

  def _exchange(self, request: bytes) -> bytes:
    """Sends `request` (on the stream, opened on first use) and returns the response's bytes."""
    with self._lock:
      if self._closed:
        raise errors.make_error(errors.UNAVAILABLE, 'The client is closed (server closed).')
      return self._transport.exchange(request)

  def _read_response(self, name: str, data: bytes, num_outputs: int) -> List[Any]:
    """The outputs in the response `data`, parsed, or the error it carries. Remembers the
    layout of a successful response: the next ones like it are read without parsing."""
    try:
      response = service_pb2.CallResponse.FromString(data)
    except Exception as e:  # pylint: disable=broad-except
      raise errors.make_error(errors.INTERNAL,
                              f'Cannot parse CallResponse: {e or type(e).__name__}') from None
    if response.status_code:
      raise errors.make_error(response.status_code, response.status_error_message)
    tensors = response.tensor
    if len(tensors) != num_outputs:
      raise errors.make_error(errors.INVALID_ARGUMENT, f'Number of outputs was {len(tensors)} '
                              f'but expected {num_outputs}')
    try:
      outputs = [codec.decode_tensor(t) for t in tensors]
    except codec.CodecError as e:
      raise errors.make_error(errors.INTERNAL, f'Parsing of tensor failed: {e}') from None
    layout = message_layout.learn_response(data, response)
    if layout is not None:
      if len(self._response_layouts) >= _MAX_RESPONSE_LAYOUTS:
        self._response_layouts.clear()  # Sizes that change every call: not worth keeping.
      self._response_layouts[(name, len(data))] = layout
    return outputs

  # --- lifetime -----------------------------------------------------------------------------------

  def close(self) -> None:
    """Closes the stream and the channel (or shared-memory connection); later calls raise
    UnavailableError, and so does a call in flight in another thread (it holds the lock: its
    stream is ended first). Idempotent."""
    self._transport.interrupt()
    with self._lock:
      if self._closed:
        return
      self._closed = True
    self._transport.close()

  def __enter__(self) -> 'Client':
    return self

  def __exit__(self, *exc_info) -> None:
    self.close()

  def __del__(self):
    try:
      if not self.__dict__.get('_closed', True) and '_transport' in self.__dict__:
        self.close()
    except Exception:  # pylint: disable=broad-except
      pass


__all__ = ['Client', 'DEFAULT_MAX_MESSAGE_LENGTH']
