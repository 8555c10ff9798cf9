"""Server/Client behaviour, after the original's grpc/python/ops_test.py (reference §7).

Real gRPC over unix sockets (TCP where the address form is the point), real TensorFlow.
"""

import collections
import concurrent.futures
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.grpc import errors

Foo = collections.namedtuple('Foo', 'a b')
Bar = collections.namedtuple('Bar', 'c d')


@pytest.fixture
def pool():
  with concurrent.futures.ThreadPoolExecutor(16) as executor:
    yield executor


def _started(servers, address, *fns, **kwargs):
  server = servers([address], **kwargs)
  for fn in fns:
    server.bind(fn)
  server.start()
  return server


@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def foo(x):
  return x + 1


@pytest.mark.timeout(60)
def test_simple(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  assert client.foo(42) == 43
  assert isinstance(client.foo(np.int32(1)), np.ndarray)


@pytest.mark.timeout(60)
def test_simple_two_calls(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  assert client.foo(42) == 43
  assert client.foo(44) == 45


@pytest.mark.timeout(60)
@pytest.mark.parametrize('address_form', ['tcp', 'ipv6_any', 'unix'])
def test_address_forms(servers, clients, unix_address, free_port, address_form):
  port = free_port
  listen, connect = {
      'tcp': (f'localhost:{port}', f'localhost:{port}'),
      'ipv6_any': (f'[::]:{port}', f'localhost:{port}'),
      'unix': (unix_address, unix_address),
  }[address_form]
  _started(servers, listen, foo)
  assert clients(connect).foo(1) == 2


@pytest.mark.timeout(60)
def test_port_zero_picks_a_port(servers, clients):
  server = _started(servers, 'localhost:0', foo)
  (port,) = server.ports
  assert port > 0
  assert clients(f'localhost:{port}').foo(1) == 2


@pytest.mark.timeout(60)
def test_address_in_use(servers):
  server = _started(servers, 'localhost:0', foo)
  other = servers([f'localhost:{server.ports[0]}'])
  other.bind(foo)
  with pytest.raises(tf.errors.UnavailableError, match='Could not listen on address'):
    other.start()


@pytest.mark.timeout(60)
def test_empty_input(servers, clients, unix_address):
  @tf.function(input_signature=[])
  def empty():
    return 42

  _started(servers, unix_address, empty)
  assert clients(unix_address).empty() == 42


@pytest.mark.timeout(60)
def test_empty_output(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def empty_list(x):
    del x
    return []

  _started(servers, unix_address, empty_list)
  assert clients(unix_address).empty_list(1) == []


@pytest.mark.timeout(60)
def test_none_output(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def nothing(x):
    del x

  _started(servers, unix_address, nothing)
  assert clients(unix_address).nothing(1) is None


@pytest.mark.timeout(120)
def test_large_tensor(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([10 * 1024 * 1024], tf.float32)])
  def big(x):
    return x + 1

  _started(servers, unix_address, big)
  x = np.arange(10 * 1024 * 1024, dtype=np.float32)  # 40 MB
  out = clients(unix_address).big(x)
  assert out.shape == x.shape and out[0] == 1 and out[-1] == x[-1] + 1


@pytest.mark.timeout(60)
def test_message_size_limit(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([None], tf.uint8)])
  def size(x):
    return tf.size(x)

  _started(servers, unix_address, size, max_message_length=1024 * 1024)
  # The client refuses to send it ...
  client = clients(unix_address, max_message_length=1024 * 1024)
  with pytest.raises(tf.errors.ResourceExhaustedError):
    client.size(np.zeros(2 * 1024 * 1024, np.uint8))
  assert client.size(np.zeros(10, np.uint8)) == 10  # The next call uses a new stream.
  # ... and the server refuses it from a client with a larger limit.
  client = clients(unix_address)
  with pytest.raises(tf.errors.ResourceExhaustedError):
    client.size(np.zeros(2 * 1024 * 1024, np.uint8))
  assert client.size(np.zeros(10, np.uint8)) == 10


@pytest.mark.timeout(60)
def test_create_variable_on_first_trace(servers, clients, unix_address):
  holder = []

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def add_var(x):
    if not holder:
      with tf.device('/cpu:0'):
        holder.append(tf.Variable(1))
    return x + holder[0]

  _started(servers, unix_address, add_var)
  client = clients(unix_address)
  assert client.add_var(42) == 43
  holder[0].assign(2)
  assert client.add_var(42) == 44


@pytest.mark.timeout(60)
@pytest.mark.parametrize('call_before_start', [False, True])
def test_client_waits_for_server(servers, clients, unix_address, pool, call_before_start):
  server = servers([unix_address])
  server.bind(foo)

  def construct_and_call():
    client = clients(unix_address)
    return client.foo(42)

  def construct():
    return clients(unix_address)

  if call_before_start:
    future = pool.submit(construct_and_call)
  else:
    future = pool.submit(construct)
  time.sleep(1)
  assert not future.done()
  server.start()
  result = future.result(timeout=30)
  if call_before_start:
    assert result == 43
  else:
    assert result.foo(42) == 43


@pytest.mark.timeout(60)
def test_waiting_clients_connect_within_a_second_of_the_server_starting(servers, clients,
                                                                       unix_address, pool):
  """Clients try to connect every 0.5 s, however long they have waited (with gRPC's default
  backoff, 1 s growing to 2 minutes, actors started with their learner idled for seconds)."""
  server = servers([unix_address])
  server.bind(foo)

  def connect(index):
    # Channels with different arguments keep their own connection and their own backoff.
    clients(unix_address, options=[('grpc.primary_user_agent', f'client {index}')])
    return time.monotonic()

  connections = [pool.submit(connect, index) for index in range(8)]
  time.sleep(5)  # Many failed attempts each: a backoff growing from 1 s would be past 1.5 s.
  assert not any(connection.done() for connection in connections)
  started = time.monotonic()
  server.start()
  latencies = [connection.result(timeout=30) - started for connection in connections]
  assert max(latencies) < 1.2, latencies


@pytest.mark.timeout(60)
def test_client_timeout(unix_address):
  start = time.time()
  with pytest.raises(tf.errors.UnavailableError, match='not reachable'):
    grpc.Client(unix_address, timeout=0.5)
  assert time.time() - start < 10


@pytest.mark.timeout(60)
def test_captured_constant(servers, clients, unix_address):
  a = tf.constant(2)

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def divide(x):
    return x // a

  _started(servers, unix_address, divide)
  assert clients(unix_address).divide(42) == 21


@pytest.mark.timeout(60)
def test_enqueue_from_bound_function(servers, clients, unix_address):
  q = tf.queue.FIFOQueue(10, [tf.int32], [[]])

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def enqueue(x):
    q.enqueue(x)

  _started(servers, unix_address, enqueue)
  client = clients(unix_address)
  client.enqueue(42)
  client.enqueue(43)
  assert q.dequeue().numpy() == 42
  assert q.dequeue().numpy() == 43


@pytest.mark.timeout(60)
def test_enqueued_batch_is_not_overwritten(servers, clients, unix_address):
  """Batch buffers are never reused: a tensor the function keeps stays intact."""
  q = tf.queue.FIFOQueue(100, [tf.int32], [[2]])

  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def keep(x):
    q.enqueue(x)
    return x

  _started(servers, unix_address, keep)
  client = clients(unix_address)
  for i in range(20):
    client.keep(np.array([i, -i], np.int32))
  for i in range(20):
    np.testing.assert_array_equal(q.dequeue().numpy(), [i, -i])


@pytest.mark.timeout(60)
def test_kept_batch_rows_are_not_overwritten(servers, clients, unix_address, pool):
  """Same with rows assembled from two callers into the server's batch buffers."""
  q = tf.queue.FIFOQueue(100, [tf.int32], [[2]])

  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def keep(x):
    q.enqueue(x)
    return x

  _started(servers, unix_address, keep)
  a, b = clients(unix_address), clients(unix_address)
  for i in range(1, 21):
    fa, fb = pool.submit(a.keep, i), pool.submit(b.keep, -i)
    assert (fa.result(30), fb.result(30)) == (i, -i)
  for i in range(1, 21):
    assert sorted(q.dequeue().numpy().tolist()) == [-i, i]


@pytest.mark.timeout(60)
def test_strings(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
  def hello(x):
    return tf.strings.join([x, ' world'])

  _started(servers, unix_address, hello)
  assert clients(unix_address).hello('hello') == b'hello world'


@pytest.mark.timeout(60)
def test_client_address_must_be_a_string():
  with pytest.raises(tf.errors.InvalidArgumentError, match='server_address must be a scalar'):
    grpc.Client(['a', 'b'])


@pytest.mark.timeout(60)
@pytest.mark.parametrize('addresses', ['localhost:1', [['localhost:1']], [1]])
def test_server_addresses_must_be_a_vector(addresses):
  with pytest.raises(tf.errors.InvalidArgumentError, match='server_addresses must be a vector'):
    grpc.Server(addresses)


@pytest.mark.timeout(60)
def test_start_without_bind(servers, unix_address):
  with pytest.raises(tf.errors.UnavailableError, match='No function was bound'):
    servers([unix_address]).start()


@pytest.mark.timeout(60)
def test_bind_twice(servers, unix_address):
  server = servers([unix_address])
  server.bind(foo)
  with pytest.raises(tf.errors.InvalidArgumentError, match="Function 'foo' was bound twice."):
    server.bind(foo)


@pytest.mark.timeout(60)
def test_bind_requires_input_signature(servers, unix_address):
  @tf.function
  def no_signature(x):
    return x

  with pytest.raises(ValueError, match='tf.function must have input_signature set.'):
    servers([unix_address]).bind(no_signature)


@pytest.mark.timeout(60)
def test_start_twice(servers, unix_address):
  server = _started(servers, unix_address, foo)
  with pytest.raises(tf.errors.InvalidArgumentError, match='Server is already started'):
    server.start()


@pytest.mark.timeout(60)
def test_wrong_number_of_arguments(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='Expects 1 arguments, but 2 is provided'):
    clients(unix_address).foo(42, 43)


@pytest.mark.timeout(60)
def test_wrong_dtype(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Expects arg\[0\] to be int32 but string is provided'):
    client.foo('a string')
  assert client.foo(1) == 2  # The stream survives.


@pytest.mark.timeout(60)
def test_failing_assert(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def check(x):
    tf.debugging.assert_equal(x, 0)
    return x

  _started(servers, unix_address, check)
  client = clients(unix_address)
  with pytest.raises(tf.errors.InvalidArgumentError, match='assertion failed'):
    client.check(1)
  assert client.check(0) == 0


@pytest.mark.timeout(60)
def test_error_code_of_the_function_is_kept(servers, clients, unix_address):
  q = tf.queue.FIFOQueue(1, [tf.int32], [[]])
  q.close()

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def dequeue(x):
    return q.dequeue() + x

  _started(servers, unix_address, dequeue)
  with pytest.raises(tf.errors.OutOfRangeError):
    clients(unix_address).dequeue(1)


@pytest.mark.timeout(60)
def test_nests(servers, clients, unix_address):
  signature = (Foo(tf.TensorSpec([], tf.int32), (tf.TensorSpec([], tf.int32),
                                                 tf.TensorSpec([], tf.int32))),
               tf.TensorSpec([], tf.int32))

  @tf.function(input_signature=signature)
  def nested(x, y):
    return Bar(c=[x.a + 1, x.b[0] + 2], d={'y': y + 3, 'z': (x.b[1] + 4, None)})

  _started(servers, unix_address, nested)
  out = clients(unix_address).nested(Foo(a=1, b=(2, 3)), 4)
  assert type(out).__name__ == 'Bar' and out._fields == ('c', 'd')
  assert out == Bar(c=[2, 4], d={'y': 7, 'z': (7, None)})


@pytest.mark.timeout(60)
def test_dict_inputs_in_sorted_key_order(servers, clients, unix_address):
  @tf.function(input_signature=[{'b': tf.TensorSpec([], tf.float32),
                                 'a': tf.TensorSpec([], tf.int32)}])
  def dict_in(d):
    return d['a'] * 10 + tf.cast(d['b'], tf.int32)

  _started(servers, unix_address, dict_in)
  assert clients(unix_address).dict_in({'b': 1.0, 'a': 2}) == 21


@pytest.mark.timeout(60)
def test_call_after_shutdown(servers, clients, unix_address):
  server = _started(servers, unix_address, foo)
  client = clients(unix_address)
  assert client.foo(1) == 2
  server.shutdown()
  with pytest.raises(tf.errors.UnavailableError, match='server closed'):
    client.foo(42)


@pytest.mark.timeout(60)
def test_shutdown_while_in_call(servers, clients, unix_address, pool):
  started = threading.Event()

  def sleep(x):
    started.set()
    time.sleep(1)
    return x

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def slow(x):
    return tf.py_function(sleep, [x], tf.int32)

  server = _started(servers, unix_address, slow)
  client = clients(unix_address)
  future = pool.submit(client.slow, 42)
  assert started.wait(30)
  server.shutdown()
  with pytest.raises(tf.errors.UnavailableError):
    future.result(30)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('delete', [False, True])
def test_shutdown_while_blocked_on_queue(servers, clients, unix_address, pool, delete):
  q = tf.queue.FIFOQueue(1, [tf.int32], [[]])

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def block(x):
    q.enqueue(x)
    q.enqueue(x)  # Blocks: the queue holds one element.
    return x

  server = grpc.Server([unix_address], shutdown_timeout=0.5)
  server.bind(block)
  server.start()
  client = clients(unix_address)
  future = pool.submit(client.block, 42)
  deadline = time.time() + 30
  while q.size().numpy() < 1 and time.time() < deadline:
    time.sleep(0.01)
  if delete:
    del server
  else:
    server.shutdown()
  try:
    with pytest.raises((tf.errors.UnavailableError, tf.errors.CancelledError)):
      future.result(30)
  finally:
    q.close(cancel_pending_enqueues=True)  # Releases the blocked execution.


@pytest.mark.timeout(60)
def test_shutdown_and_start_again(servers, clients, unix_address):
  server = _started(servers, unix_address, foo)
  server.shutdown()
  server.start()
  assert clients(unix_address).foo(42) == 43
  server.shutdown()
  server.start()
  assert clients(unix_address).foo(1) == 2


@pytest.mark.timeout(60)
def test_client_survives_server_restart(servers, clients, unix_address):
  server = _started(servers, unix_address, foo)
  client = clients(unix_address)
  assert client.foo(1) == 2
  server.shutdown()
  server.start()
  with pytest.raises(tf.errors.UnavailableError):
    client.foo(1)  # The old stream is gone ...
  assert client.foo(1) == 2  # ... the next call opens a new one.


@pytest.mark.timeout(60)
def test_shutdown_is_idempotent(servers, clients, unix_address):
  server = servers([unix_address])
  server.shutdown()  # Not started yet: nothing to stop, and the server stays usable.
  server.bind(foo)
  server.start()
  client = clients(unix_address)
  assert client.foo(1) == 2
  server.shutdown()
  server.shutdown()  # Already stopped: nothing more happens.
  with pytest.raises(tf.errors.UnavailableError):
    client.foo(1)
  server.start()  # The repeated shutdown left a server that starts again with its bindings.
  assert client.foo(1) == 2


@pytest.mark.timeout(60)
def test_rank_zero_output_disables_batching(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32), tf.TensorSpec([2], tf.int32)])
  def dot(x, y):
    return tf.reduce_sum(x * y)

  _started(servers, unix_address, dot)
  client = clients(unix_address)
  assert client.dot(np.array([1, 2], np.int32), np.array([3, 4], np.int32)) == 11
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Expects arg\[0\] to have shape with 1 dimension\(s\), but had '
                           r'shape \[\]'):
    client.dot(1, 2)


@pytest.mark.timeout(60)
def test_shutdown_while_waiting_for_batch(servers, clients, unix_address, pool):
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def batched(x):
    return x + 1

  server = _started(servers, unix_address, batched)
  client = clients(unix_address)
  future = pool.submit(client.batched, 1)  # Waits for a second row forever.
  time.sleep(0.5)
  assert not future.done()
  server.shutdown()
  with pytest.raises(tf.errors.UnavailableError, match='server closed'):
    future.result(30)


@pytest.mark.timeout(60)
def test_close_from_another_thread_ends_a_call_waiting_for_its_batch(servers, clients,
                                                                      unix_address, pool):
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def batched(x):
    return x + 1

  _started(servers, unix_address, batched)
  client = clients(unix_address)
  future = pool.submit(client.batched, 1)  # Waits for a second row forever.
  time.sleep(0.5)
  assert not future.done()
  client.close()
  with pytest.raises(tf.errors.UnavailableError):
    future.result(10)
  with pytest.raises(tf.errors.UnavailableError, match='closed'):
    client.batched(1)
  # The server serves other clients as before; the closed call's row still fills a batch
  # (as the last call of a dead actor does), nobody waits for its answer.
  assert int(clients(unix_address).batched(2)) == 3


@pytest.mark.timeout(60)
def test_two_clients(servers, clients, unix_address, pool):
  _started(servers, unix_address, foo)
  a, b = clients(unix_address), clients(unix_address)
  futures = [pool.submit(c.foo, i) for i in range(10) for c in (a, b)]
  assert sorted(f.result(30) for f in futures) == sorted(list(range(1, 11)) * 2)


@pytest.mark.timeout(60)
def test_one_client_from_many_threads(servers, clients, unix_address, pool):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  futures = [pool.submit(client.foo, i) for i in range(40)]
  assert [f.result(30) for f in futures] == list(range(1, 41))


@pytest.mark.timeout(60)
def test_not_fully_specified_outputs(servers, clients, unix_address, pool):
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def unknown_rank(x):
    del x
    return tf.py_function(lambda: np.int32(1), [], tf.int32)  # Scalar at run time.

  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def unknown_dim(x):
    y = tf.py_function(lambda v: v + 1, [x], tf.int32)
    y.set_shape([None])
    return y

  _started(servers, unix_address, unknown_rank, unknown_dim)
  a, b = clients(unix_address), clients(unix_address)
  futures = [pool.submit(c.unknown_rank, 1) for c in (a, b)]
  for future in futures:
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match='Output must be at least rank 1 when batching is enabled'):
      future.result(30)
  futures = [pool.submit(c.unknown_dim, i) for i, c in ((1, a), (5, b))]
  assert [f.result(30) for f in futures] == [2, 6]


@pytest.mark.timeout(60)
def test_wrong_trailing_shape(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([4, 3], tf.int32)])
  def rows(x):
    return x

  _started(servers, unix_address, rows)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Expects arg\[0\] to have shape with suffix \[3\], but had shape '
                           r'\[3,4\]'):
    clients(unix_address).rows(np.zeros([3, 4], np.int32))


@pytest.mark.timeout(90)
def test_stress_with_shutdown_midway(servers, unix_address, pool):
  """10 clients x 100 scalar calls into a [5]-batched function; shutdown after half."""
  @tf.function(input_signature=[tf.TensorSpec([5], tf.int32)])
  def plus_one(x):
    return x + 1

  server = _started(servers, unix_address, plus_one)
  done = []
  done_lock = threading.Lock()
  half = threading.Event()

  def run(client_index):
    with grpc.Client(unix_address, timeout=30) as client:
      for i in range(100):
        value = client_index * 1000 + i
        try:
          result = client.plus_one(value)
        except tf.errors.UnavailableError:
          return 'unavailable'
        assert result == value + 1
        with done_lock:
          done.append(value)
          if len(done) >= 500:
            half.set()
    return 'finished'

  futures = [pool.submit(run, i) for i in range(10)]
  assert half.wait(60)
  server.shutdown()
  outcomes = [f.result(30) for f in futures]
  assert len(done) >= 500
  assert 'unavailable' in outcomes  # Every client was still calling when the server went away.


@pytest.mark.timeout(60)
def test_variables_and_devices(servers, clients, unix_address):
  """Adaptation of the original's TPU tests to CPU devices: variables on one device, computation
  placed explicitly and by default, outputs fetched to the host."""
  with tf.device('/cpu:0'):
    counter = tf.Variable(0, dtype=tf.int64)
    weights = tf.Variable(tf.ones([2, 3]))

  @tf.function(input_signature=[tf.TensorSpec([4, 2], tf.float32)])
  def dense(x):
    counter.assign_add(1)
    with tf.device('/cpu:0'):
      y = tf.matmul(x, weights)
    return y, tf.fill([4], counter)

  _started(servers, unix_address, dense)
  client = clients(unix_address)
  y, count = client.dense(np.ones([4, 2], np.float32))
  np.testing.assert_allclose(y, np.full([4, 3], 2.0))
  assert count.tolist() == [1] * 4
  weights.assign(tf.zeros([2, 3]))
  y, count = client.dense(np.ones([4, 2], np.float32))
  np.testing.assert_allclose(y, 0)
  assert count.tolist() == [2] * 4


@pytest.mark.timeout(60)
def test_nested_function_with_captured_variable(servers, clients, unix_address):
  v = tf.Variable(3)

  @tf.function
  def inner(x):
    return x * v

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def outer(x):
    return inner(x) + 1

  _started(servers, unix_address, outer)
  assert clients(unix_address).outer(2) == 7


@pytest.mark.timeout(60)
def test_two_functions(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def bar(x):
    return x * 2

  _started(servers, unix_address, foo, bar)
  client = clients(unix_address)
  assert client.foo(1) == 2 and client.bar(5) == 10
  assert client.method_names == ['foo', 'bar']


@pytest.mark.timeout(60)
def test_variable_out_of_python_scope(servers, clients, unix_address):
  def make():
    v = tf.Variable(10)

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def read(x):
      return x + v

    return read

  _started(servers, unix_address, make())
  import gc  # pylint: disable=g-import-not-at-top
  gc.collect()
  assert clients(unix_address).read(1) == 11


@pytest.mark.timeout(60)
def test_full_batch_is_a_direct_call(servers, clients, unix_address):
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def twice(x):
    return x * 2

  _started(servers, unix_address, twice)
  out = clients(unix_address).twice(np.array([3, 4], np.int32))
  np.testing.assert_array_equal(out, [6, 8])


@pytest.mark.timeout(60)
def test_client_side_batching(servers, clients, unix_address, pool):
  @tf.function(input_signature=[tf.TensorSpec([4], tf.int32)])
  def plus(x):
    return x + 1

  _started(servers, unix_address, plus)
  a, b = clients(unix_address), clients(unix_address)
  fa = pool.submit(a.plus, np.array([1, 2], np.int32))
  fb = pool.submit(b.plus, np.array([10, 20], np.int32))
  np.testing.assert_array_equal(fa.result(30), [2, 3])
  np.testing.assert_array_equal(fb.result(30), [11, 21])


@pytest.mark.timeout(60)
def test_mixed_single_and_block_callers(servers, clients, unix_address, pool):
  @tf.function(input_signature=[tf.TensorSpec([3], tf.int32)])
  def plus(x):
    return x + 1

  _started(servers, unix_address, plus)
  a, b = clients(unix_address), clients(unix_address)
  fa = pool.submit(a.plus, 5)
  fb = pool.submit(b.plus, np.array([7, 8], np.int32))
  single, block = fa.result(30), fb.result(30)
  assert single.shape == () and single == 6
  np.testing.assert_array_equal(block, [8, 9])


@pytest.mark.timeout(60)
def test_a_call_that_does_not_fit_waits_for_the_next_batch(servers, clients, unix_address, pool):
  @tf.function(input_signature=[tf.TensorSpec([4], tf.int32)])
  def plus(x):
    return x + 1

  _started(servers, unix_address, plus)
  a, b, c = clients(unix_address), clients(unix_address), clients(unix_address)
  fa = pool.submit(a.plus, np.array([1, 2, 3], np.int32))
  time.sleep(0.3)
  fb = pool.submit(b.plus, np.array([1, 2], np.int32))  # 2 rows, 1 free: the next batch.
  time.sleep(0.3)
  assert c.plus(7) == 8
  np.testing.assert_array_equal(fa.result(30), [2, 3, 4])
  assert not fb.done()
  np.testing.assert_array_equal(c.plus(np.array([9, 10], np.int32)), [10, 11])
  np.testing.assert_array_equal(fb.result(30), [2, 3])


@pytest.mark.timeout(60)
def test_round_robin_list_of_functions(servers, clients, unix_address):
  def make(offset):
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def inference(x):
      return x + offset
    return inference

  _started(servers, unix_address, [make(100), make(200)])
  client = clients(unix_address)
  assert [client.inference(0) for _ in range(4)] == [100, 200, 100, 200]
  assert client.method_names == ['inference']


@pytest.mark.timeout(60)
def test_unknown_method_is_attribute_error(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  assert not hasattr(client, 'update_config')
  with pytest.raises(AttributeError, match="no method 'bar'"):
    client.bar  # pylint: disable=pointless-statement


@pytest.mark.timeout(60)
def test_close_and_context_manager(servers, unix_address):
  _started(servers, unix_address, foo)
  with grpc.Client(unix_address, timeout=30) as client:
    assert client.foo(1) == 2
  with pytest.raises(tf.errors.UnavailableError, match='closed'):
    client.foo(1)
  client.close()  # Idempotent.


@pytest.mark.timeout(60)
def test_client_encoding_error(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  with pytest.raises(tf.errors.InvalidArgumentError, match=r'arg\[0\]: None cannot be sent'):
    client.foo(None)
  assert client.foo(1) == 2


@pytest.mark.timeout(60)
def test_errors_are_tf_classes_when_tf_is_loaded(servers, clients, unix_address):
  _started(servers, unix_address, foo)
  client = clients(unix_address)
  with pytest.raises(tf.errors.InvalidArgumentError) as info:
    client.foo(1, 2)
  assert info.value.error_code == errors.INVALID_ARGUMENT
  assert tf.errors.InvalidArgumentError in errors.error_classes(errors.INVALID_ARGUMENT)


@pytest.mark.timeout(60)
def test_only_eager_mode():
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match='Only eager mode is currently supported.'):
      grpc.Server(['localhost:0'])


@tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
def pair(x):
  return x * 2


@pytest.mark.timeout(60)
def test_pending_batches_show_callers_waiting_for_a_batch(servers, clients, unix_address,
                                                          pool):
  server = _started(servers, unix_address, pair)
  assert server.pending_batches() == []
  client = clients(unix_address)
  waiting = pool.submit(client.pair, np.int32(5))
  deadline = time.time() + 30
  while not server.pending_batches():
    assert time.time() < deadline
    time.sleep(0.01)
  [pending] = server.pending_batches(min_waiting_secs=0.)
  assert (pending.method, pending.batch_size, pending.rows, pending.callers) == ('pair', 2, 1, 1)
  assert pending.inputs[0].tolist() == [5] and pending.executions_in_flight == 0
  time.sleep(0.3)
  [pending] = server.pending_batches(min_waiting_secs=10.)
  assert pending.waiting_secs >= 0.3 and pending.inputs is None
  assert clients(unix_address).pair(np.int32(6)) == 12  # Another client fills the batch.
  assert waiting.result(30) == 10
  assert server.pending_batches() == []
  server.shutdown()
  assert server.pending_batches() == []
