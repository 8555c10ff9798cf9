"""Round trips of 8 Atari observations -> 8 actions: shared memory vs gRPC, and a raw echo.

One client process (no TensorFlow in it) calls, one call at a time, a server process that
serves the same bound tf.function (`act`: 8 observations of 84x84 uint8 -> 8 int32 actions, a
full batch, i.e. a direct call) over both transports at once, and a raw shared-memory echo:
- shm: `seed_rl.grpc.Client('shm:NAME')`;
- grpc: `seed_rl.grpc.Client('unix:PATH')` (gRPC over a unix socket);
- raw shm echo: `seed_rl.shm`'s connection to a listener that answers every request with 8
  bytes, with no protobuf, batching or TensorFlow: the carriage alone, the floor of any call.
Phases alternate `--repeats` times in the same run; it prints the medians of wall time, client
CPU and server CPU per call, and the ratios of each transport to the raw echo and of gRPC to
shm.

  .venv/bin/python bench/shm_throughput.py --calls 3000 --repeats 3
"""

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BATCH = 8
OBSERVATION_SHAPE = (84, 84)
_ECHO_RESPONSE = b'\x00' * (4 * BATCH)


class _Echo:
  """A `seed_rl.shm.listener.Handler` that answers every request with 8 actions' bytes."""

  def shm_welcome(self, token, peer):
    del token, peer
    return 0, '', b''

  def shm_serve(self, requests, peer, max_response_bytes):
    del peer, max_response_bytes
    for _ in requests:
      yield _ECHO_RESPONSE


def _serve(shm_address: str, unix_address: str, echo_address: str, ready, stop) -> None:
  """The server process: seed_rl's server on both transports, and the raw echo."""
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  from seed_rl.shm import listener  # pylint: disable=g-import-not-at-top

  @tf.function(input_signature=[tf.TensorSpec((BATCH,) + OBSERVATION_SHAPE, tf.uint8)])
  def act(observations):
    return tf.cast(observations[:, 0, 0], tf.int32)

  server = grpc.Server([shm_address, unix_address])
  server.bind(act)
  server.start()
  echo = listener.Listener(echo_address, _Echo(), 1 << 20, 1 << 10)
  ready.set()
  stop.wait()
  echo.stop(0)
  server.shutdown()


def _cpu_seconds(pid: int) -> float:
  """User + system CPU time of process `pid`, all its threads."""
  with open(f'/proc/{pid}/stat') as f:
    fields = f.read().rsplit(')', 1)[1].split()
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _measure(call, calls: int, server_pid: int):
  """(wall, client CPU, server CPU) seconds per call of `calls` calls of `call`."""
  for _ in range(min(100, calls)):
    call()
  server_cpu, cpu, wall = _cpu_seconds(server_pid), time.process_time(), time.perf_counter()
  for _ in range(calls):
    call()
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  server_cpu = _cpu_seconds(server_pid) - server_cpu
  return wall / calls, cpu / calls, server_cpu / calls


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
  parser.add_argument('--calls', type=int, default=3000, help='calls per phase')
  parser.add_argument('--repeats', type=int, default=3, help='rounds of the three phases')
  args = parser.parse_args()

  import numpy as np  # pylint: disable=g-import-not-at-top
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  from seed_rl.shm import connection  # pylint: disable=g-import-not-at-top

  tag = f'bench{os.getpid()}'
  directory = tempfile.mkdtemp(prefix='shmbench')
  addresses = (f'shm:{tag}', f'unix:{directory}/server.sock', f'shm:{tag}_echo')
  context = mp.get_context('spawn')
  ready, stop = context.Event(), context.Event()
  server = context.Process(target=_serve, args=addresses + (ready, stop), daemon=True)
  server.start()
  try:
    if not ready.wait(120):
      raise SystemExit('The server process did not start within 120 s.')
    observations = np.random.randint(0, 255, (BATCH,) + OBSERVATION_SHAPE, np.uint8)
    shm_act = grpc.Client(addresses[0], timeout=30).act
    grpc_act = grpc.Client(addresses[1], timeout=30).act
    echo = connection.Connection(addresses[2], timeout=30)
    request = observations.tobytes()
    phases = {
        'shm': lambda: shm_act(observations),
        'grpc (unix socket)': lambda: grpc_act(observations),
        'raw shm echo': lambda: echo.exchange(request),
    }
    assert shm_act(observations).tolist() == observations[:, 0, 0].tolist()
    results = {name: [] for name in phases}
    for _ in range(args.repeats):
      for name, call in phases.items():
        results[name].append(_measure(call, args.calls, server.pid))
    medians = {name: [statistics.median(r[i] for r in runs) for i in range(3)]
               for name, runs in results.items()}
  finally:
    stop.set()
    server.join(30)
  print(f'{BATCH} observations of {OBSERVATION_SHAPE[0]}x{OBSERVATION_SHAPE[1]} uint8 -> '
        f'{BATCH} actions, {args.calls} calls x {args.repeats} rounds, medians, per call:')
  print(f'{"":20s} {"wall µs":>9s} {"client CPU µs":>14s} {"server CPU µs":>14s}   '
        'x raw echo (wall, client CPU)')
  floor = medians['raw shm echo']
  for name, (wall, cpu, server_cpu) in medians.items():
    print(f'{name:20s} {wall * 1e6:9.1f} {cpu * 1e6:14.1f} {server_cpu * 1e6:14.1f}   '
          f'{wall / floor[0]:5.2f} {cpu / floor[1]:6.2f}')
  shm, over_grpc = medians['shm'], medians['grpc (unix socket)']
  # The server's CPU time is counted in clock ticks (10 ms): a short run may see none.
  server_ratio = f'{over_grpc[2] / shm[2]:.2f}' if shm[2] else 'n/a (too few calls to count)'
  print(f'grpc / shm: wall {over_grpc[0] / shm[0]:.2f}, client CPU {over_grpc[1] / shm[1]:.2f}, '
        f'server CPU {server_ratio}')


if __name__ == '__main__':
  main()
