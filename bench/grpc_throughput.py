"""Throughput of seed_rl.grpc central inference vs. a raw grpcio ping-pong, same payload and K.

K client *processes* (no TensorFlow in them) each loop on the real actor call
`client.inference(env_ids, run_ids, EnvOutput(reward, done, observation, abandoned, episode_step),
raw_rewards)` with `env_batch_size` envs of 84x84x1 uint8 observations. The learner process binds
a trivial batched tf.function (batch = `--clients_per_batch` clients' rows). In the same run, the
same K processes do two raw grpcio bidirectional ping-pongs (bytes of the same size as the
encoded seed_rl request, reply of the response's size) against an echo server of the same model
as seed_rl's (sync grpcio, one thread per stream; `--raw_server aio` for grpc.aio) in the same
learner process:
- raw: the bare echo;
- raw+fn: the echo server also calls the bound function on a full batch, as the seed_rl server
  runs it, once per `clients_per_batch` messages: the least work any central-inference server
  does, i.e. the ceiling for seed_rl (sync model only).
Prints env-steps/s of all three, seed_rl / raw and seed_rl / (raw+fn), and the cost of one call
of the bound function measured alone in a loop (in the servers it costs more: between RPCs the
caches are cold).

  .venv/bin/python bench/grpc_throughput.py --seconds 3
  .venv/bin/python bench/grpc_throughput.py --clients 1,4,8 --env_batch_sizes 1,16 --seconds 2 \
      --repeats 3

docs/performance.md (The RPC layer) has the targets and what they reach. Clients and server
share the same cores, so figures vary between runs; each (K, env_batch_size) point runs the
phases back to back, alternating `--repeats` times, and reports the medians.
"""

import argparse
import asyncio
import collections
import itertools
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EnvOutput = collections.namedtuple('EnvOutput',
                                   'reward done observation abandoned episode_step')
OBSERVATION_SHAPE = (84, 84, 1)
_RAW_METHOD = '/bench.Raw/Call'


def make_actor_args(env_batch_size: int, actor_index: int):
  """The arguments of one actor call, as numpy arrays (like seed_rl's actor)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  b = env_batch_size
  env_ids = np.arange(actor_index * b, (actor_index + 1) * b, dtype=np.int32)
  run_ids = np.random.randint(0, 2**62, size=b, dtype=np.int64)
  env_output = EnvOutput(
      reward=np.zeros(b, np.float32), done=np.zeros(b, np.bool_),
      observation=np.random.randint(0, 255, (b,) + OBSERVATION_SHAPE, dtype=np.uint8),
      abandoned=np.zeros(b, np.bool_), episode_step=np.zeros(b, np.int32))
  raw_rewards = np.zeros(b, np.float32)
  return env_ids, run_ids, env_output, raw_rewards


def payload_sizes(env_batch_size: int):
  """Serialized sizes of a seed_rl request and response for `env_batch_size` envs."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import codec, wire  # pylint: disable=g-import-not-at-top
  args = make_actor_args(env_batch_size, 0)
  request = wire.encode_call_request('inference', codec.flatten(list(args)))
  actions = np.zeros(env_batch_size, np.int32)
  response = wire.encode_call_response([actions], [codec.wire_code(actions)])
  return len(request), len(response)


# --- client processes (numpy + grpcio only) -------------------------------------------------

def _measure(call, window, ready, results, stop):
  """Calls without pause until `stop`; counts the calls that complete inside the shared time
  window [window[0], window[1]) that the learner sets once every client is ready. Clients never
  wait for each other (a barrier could starve the last, never-filled batch)."""
  call()
  ready.put(os.getpid())
  count, reported = 0, False
  while not stop.is_set():
    call()
    now = time.time()
    start, end = window[0], window[1]
    if start and start <= now < end:
      count += 1
    elif start and now >= end and not reported:
      results.put(count / (end - start))
      reported = True


def _client_main(index, phases, env_batch_size, windows, ready, results, stop_events):
  import queue  # pylint: disable=g-import-not-at-top
  import grpc  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import client as client_lib  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import errors  # pylint: disable=g-import-not-at-top
  request_size, response_size = payload_sizes(env_batch_size)
  del response_size
  args = make_actor_args(env_batch_size, index)
  for (kind, address), window, stop in zip(phases, windows, stop_events):
    if kind in ('raw', 'raw_tf'):
      channel = grpc.insecure_channel(address)
      requests = queue.SimpleQueue()
      responses = channel.stream_stream(_RAW_METHOD)(iter(requests.get, None),
                                                     wait_for_ready=True)
      payload = os.urandom(request_size)

      def call(requests=requests, responses=responses, payload=payload):
        requests.put(payload)
        return next(responses)
      try:
        _measure(call, window, ready, results, stop)
      except grpc.RpcError:
        pass  # The server stopped while the last call was in flight.
      requests.put(None)
      channel.close()
    else:
      client = client_lib.Client(address, timeout=60)
      inference = client.inference
      try:
        _measure(lambda: inference(*args), window, ready, results, stop)
      except errors.error_classes(errors.UNAVAILABLE):
        pass  # The last, never-filled batch is cancelled by the server's shutdown.
      client.close()
    assert 'tensorflow' not in sys.modules


# --- learner side -------------------------------------------------------------------------------

class RawServer:
  """Raw grpcio server answering every message of a bidirectional stream with fixed bytes.

  `model='sync'` is the server model seed_rl.grpc uses (sync grpcio, one thread per stream);
  `model='aio'` is grpc.aio on an event-loop thread, for comparison. `every_message`, if given
  (sync model only), is called by the handler thread before each reply.
  """

  def __init__(self, address: str, reply_size: int, model: str = 'sync',
               every_message=None):
    if every_message is not None and model != 'sync':
      raise ValueError('every_message needs the sync model')
    self._address = address
    self._reply = b'r' * reply_size
    self._model = model
    self._every_message = every_message
    self._server = None
    self._ready = threading.Event()
    self._thread = None
    self._loop = None
    self._stop = None

  def start(self):
    import grpc  # pylint: disable=g-import-not-at-top
    if self._model == 'sync':
      from concurrent import futures  # pylint: disable=g-import-not-at-top
      reply = self._reply
      every_message = self._every_message

      def handler(request_iterator, context):
        del context
        for _ in request_iterator:
          if every_message is not None:
            every_message()
          yield reply

      self._server = grpc.server(futures.ThreadPoolExecutor(64))
      self._server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
          'bench.Raw', {'Call': grpc.stream_stream_rpc_method_handler(handler)})])
      self._server.add_insecure_port(self._address)
      self._server.start()
      return
    self._thread = threading.Thread(target=self._aio_main, daemon=True)
    self._thread.start()
    self._ready.wait()

  def _aio_main(self):
    import grpc  # pylint: disable=g-import-not-at-top

    async def handler(request_iterator, context):
      del request_iterator
      reply = self._reply
      while True:
        request = await context.read()
        if request is grpc.aio.EOF:
          return
        await context.write(reply)

    async def serve():
      self._loop = asyncio.get_running_loop()
      self._stop = asyncio.Event()
      server = grpc.aio.server()
      server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
          'bench.Raw', {'Call': grpc.stream_stream_rpc_method_handler(handler)})])
      server.add_insecure_port(self._address)
      await server.start()
      self._ready.set()
      await self._stop.wait()
      await server.stop(0.1)

    asyncio.run(serve())

  def stop(self):
    if self._server is not None:
      self._server.stop(0.1).wait()
    else:
      self._loop.call_soon_threadsafe(self._stop.set)
      self._thread.join()


def make_inference_fn(batch_size: int):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  n = batch_size
  signature = [
      tf.TensorSpec([n], tf.int32, 'env_ids'), tf.TensorSpec([n], tf.int64, 'run_ids'),
      EnvOutput(tf.TensorSpec([n], tf.float32), tf.TensorSpec([n], tf.bool),
                tf.TensorSpec((n,) + OBSERVATION_SHAPE, tf.uint8), tf.TensorSpec([n], tf.bool),
                tf.TensorSpec([n], tf.int32)),
      tf.TensorSpec([n], tf.float32, 'raw_rewards')]

  @tf.function(input_signature=signature)
  def inference(env_ids, run_ids, env_output, raw_rewards):
    del run_ids, raw_rewards
    return env_ids + tf.cast(env_output.observation[:, 0, 0, 0], tf.int32)

  return inference


def _get(q, procs, timeout):
  """q.get() that fails fast if a client process died instead of waiting for the timeout."""
  import queue  # pylint: disable=g-import-not-at-top
  deadline = time.time() + timeout
  while True:
    try:
      return q.get(timeout=1)
    except queue.Empty:
      if not all(p.is_alive() for p in procs):
        raise RuntimeError('A client process died (its traceback is above).') from None
      if time.time() > deadline:
        raise


def bound_function_call(batch_size: int, env_batch_size: int):
  """A no-argument call of the bound function on one full batch, exactly as the server runs it
  (flat numpy arrays in, numpy arrays out; no RPC)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import binding, codec  # pylint: disable=g-import-not-at-top
  bound = binding.bind_function(make_inference_fn(batch_size), binding.cpu_device_name())
  rows = batch_size // env_batch_size
  arrays = [np.concatenate([np.asarray(a)] * rows) for a in
            codec.flatten(list(make_actor_args(env_batch_size, 0)))]
  return lambda: bound.runner(arrays)


def every_nth(n: int, fn):
  """Calls `fn` on every n-th call (thread-safe): one bound-function call per batch of n."""
  counter = itertools.count()
  return lambda: fn() if next(counter) % n == 0 else None


def function_call_cost(batch_size: int, env_batch_size: int, calls: int = 300) -> float:
  """Microseconds per call of the bound function alone, as the server runs it (no RPC)."""
  call = bound_function_call(batch_size, env_batch_size)
  for _ in range(30):
    call()
  start = time.perf_counter()
  for _ in range(calls):
    call()
  return (time.perf_counter() - start) / calls * 1e6


def _address(transport, tmpdir, name):
  if transport == 'unix':
    return f'unix:{tmpdir}/{name}.sock'
  import socket  # pylint: disable=g-import-not-at-top
  with socket.socket() as s:
    s.bind(('localhost', 0))
    port = s.getsockname()[1]
  return f'localhost:{port}'


def measure(num_clients, env_batch_size, clients_per_batch, seconds, repeats, transport, tmpdir,
            raw_server='sync'):
  """Alternates the phases raw, raw_tf and seed `repeats` times with the same K client processes.

  raw: the bare ping-pong; raw_tf: the same, with the bound function called on a full batch once
  per `clients_per_batch` messages (what any server must at least do: the floor of TensorFlow's
  cost); seed: seed_rl.grpc. Returns the median env-steps/s of each, as a dict.
  """
  from seed_rl import grpc as seed_grpc  # pylint: disable=g-import-not-at-top
  ctx = mp.get_context('spawn')
  _, response_size = payload_sizes(env_batch_size)
  batch_size = env_batch_size * clients_per_batch
  kinds = ('raw', 'raw_tf', 'seed') if raw_server == 'sync' else ('raw', 'seed')
  phases = []
  for r in range(repeats):
    for kind in kinds:
      address = _address(transport, tmpdir, f'{kind}{r}_{num_clients}_{env_batch_size}')
      phases.append((kind, address))
  windows = [ctx.Array('d', 2, lock=False) for _ in phases]
  ready = ctx.Queue()
  results = ctx.Queue()
  stops = [ctx.Event() for _ in phases]
  procs = [ctx.Process(target=_client_main,
                       args=(i, phases, env_batch_size, windows, ready, results, stops))
           for i in range(num_clients)]
  for p in procs:
    p.start()
  rates = {kind: [] for kind in kinds}
  try:
    for (kind, address), window, stop in zip(phases, windows, stops):
      if kind == 'raw':
        server = RawServer(address, response_size, raw_server)
      elif kind == 'raw_tf':
        server = RawServer(address, response_size, raw_server, every_nth(
            clients_per_batch, bound_function_call(batch_size, env_batch_size)))
      else:
        server = seed_grpc.Server([address])
        server.bind(make_inference_fn(batch_size))
      server.start()
      for _ in procs:
        _get(ready, procs, 120)
      start = time.time() + 0.5  # Let every client reach its steady state.
      window[1] = start + seconds
      window[0] = start
      total = sum(_get(results, procs, seconds + 120) for _ in procs)
      stop.set()
      if kind == 'seed':
        server.shutdown()
      else:
        server.stop()
      rates[kind].append(total * env_batch_size)
  finally:
    for p in procs:
      p.join(timeout=30)
      if p.is_alive():
        p.kill()
  return {kind: statistics.median(r) for kind, r in rates.items()}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--seconds', type=float, default=3.0,
                      help='measuring window of each phase, per client')
  parser.add_argument('--clients', default='1,4,8', help='comma-separated K values')
  parser.add_argument('--env_batch_sizes', default='1,16', help='comma-separated values')
  parser.add_argument('--clients_per_batch', type=int, default=0,
                      help='clients per server batch (inference_batch_size = this x '
                           'env_batch_size); 0: max(1, K // 2), so two batches are in flight')
  parser.add_argument('--repeats', type=int, default=1,
                      help='raw/seed_rl phase pairs per point (medians are reported)')
  parser.add_argument('--transport', choices=['unix', 'tcp'], default='unix')
  parser.add_argument('--raw_server', choices=['sync', 'aio'], default='sync',
                      help='server model of the raw baseline (seed_rl.grpc uses sync)')
  flags = parser.parse_args(argv)
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  rows = []
  with tempfile.TemporaryDirectory(prefix='seed_rl_bench_') as tmpdir:
    for env_batch_size in [int(x) for x in flags.env_batch_sizes.split(',')]:
      for k in [int(x) for x in flags.clients.split(',')]:
        per_batch = flags.clients_per_batch or max(1, k // 2)
        per_batch = min(per_batch, k)
        rates = measure(k, env_batch_size, per_batch, flags.seconds, flags.repeats,
                        flags.transport, tmpdir, flags.raw_server)
        raw, seed, raw_tf = rates['raw'], rates['seed'], rates.get('raw_tf')
        batch = per_batch * env_batch_size
        fn_us = function_call_cost(batch, env_batch_size)
        rows.append((k, env_batch_size, batch, raw, raw_tf, seed, fn_us))
        with_tf = (f'  raw+tf {raw_tf:9.0f}  seed_rl / (raw+tf) {seed / raw_tf:5.2f}'
                   if raw_tf else '')
        print(f'K={k:2d} env_batch_size={env_batch_size:3d} batch={batch:4d}'
              f'  raw grpcio {raw:9.0f} env-steps/s  seed_rl {seed:9.0f} env-steps/s'
              f'  ratio {seed / raw:5.2f}{with_tf}  (bound function alone: {fn_us:.0f} us/call)',
              flush=True)
  print()
  print('| K | env_batch_size | inference batch | raw grpcio env-steps/s | raw grpcio + bound fn '
        '| seed_rl env-steps/s | seed_rl / raw | seed_rl / (raw + fn) | bound fn alone, us/call |')
  print('|---|---|---|---|---|---|---|---|---|')
  for k, b, n, raw, raw_tf, seed, fn_us in rows:
    raw_tf_cell, vs_raw_tf = (f'{raw_tf:.0f}', f'{seed / raw_tf:.2f}') if raw_tf else ('-', '-')
    print(f'| {k} | {b} | {n} | {raw:.0f} | {raw_tf_cell} | {seed:.0f} | {seed / raw:.2f} | '
          f'{vs_raw_tf} | {fn_us:.0f} |')

if __name__ == '__main__':
  main()
