"""How much memory oversized requests make a seed_rl.grpc server hold, and whether it keeps serving.

A server process binds a small function (one int32 in, one out). `--streams` raw gRPC streams,
each on its own connection, send `--requests` requests of `--mib` MiB each (just under 128 MiB
by default, so that a server with a 128 MiB message limit receives them whole) while a good
client (its own process) keeps calling the function. With `--held`, each stream first sends one
row of a batched function whose batch never fills, so that the server reads nothing more of it,
and pushes its requests behind that row: what gRPC buffers for a stream that is not being read.

Printed per server setting: the rise of the server's resident memory (peak, from /proc's VmHWM,
and 3 s after the senders finished, above its resident memory before), what the senders got
back, and the good client's calls during (with its longest wait for one) and after. Two settings
run in the same process tree: the server's defaults (message limits sized to the bound
functions, a stream window that does not grow), and the baseline: a `--baseline_limit_mib`
(128 MiB) message limit and gRPC's growing windows, as the server had before. The last line is
the ratio of their peak rises.

  .venv/bin/python bench/grpc_memory_probe.py
  .venv/bin/python bench/grpc_memory_probe.py --held --streams 32 --requests 1 --mib 8
  .venv/bin/python bench/grpc_memory_probe.py --streams 8 --no_baseline --json

The senders' process holds one copy of each request in flight (16 x 128 MiB at the defaults).
"""

import argparse
import collections
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CALL = '/seed_rl.TensorService/Call'
_MIB = 1 << 20
# Below a 128 MiB message limit once encoded (name, dtype, shape and length fields).
_HEADER_ROOM = 64
# Batch size of `wait`: larger than any number of streams, so that its batch never fills.
_WAIT_BATCH = 1024
# The baseline server's gRPC options: the stream window grows as gRPC's bandwidth-delay probe
# finds fit (gRPC's own default, which the server's defaults turn off).
_BASELINE_OPTIONS = [('grpc.http2.bdp_probe', 1)]
# Seconds the held streams are left to fill their buffers before the server's memory is read.
_HOLD_SECONDS = 3


def _serve(address: str, max_message_length: Optional[int], options) -> None:
  """The server process: serves a small function (and `wait`) until its stdin closes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def small(x):
    return x + 1

  @tf.function(input_signature=[tf.TensorSpec([_WAIT_BATCH], tf.int32)])
  def wait(x):
    return x

  server = grpc.Server([address], max_message_length=max_message_length, options=options)
  server.bind(small)
  server.bind(wait)
  server.start()
  print('READY', flush=True)
  sys.stdin.read()
  server.shutdown()


def _call_until_stdin_closes(address: str) -> None:
  """The good client's process: calls the function in a loop until its stdin closes, then
  prints (JSON) how many calls were served, its longest wait for one and its errors."""
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  stop = threading.Event()
  threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
  calls, longest, failures = 0, 0.0, []
  with grpc.Client(address, timeout=60) as client:
    print('READY', flush=True)
    while not stop.is_set():
      start = time.monotonic()
      try:
        calls += int(client.small(calls) == calls + 1)
      except Exception as e:  # pylint: disable=broad-except
        failures.append(f'{type(e).__name__}: {e}')
      longest = max(longest, time.monotonic() - start)
      time.sleep(0.01)
  print(json.dumps({'calls': calls, 'longest_wait_s': round(longest, 3),
                    'failures': failures[:3]}), flush=True)


def _start(command: List[str]) -> subprocess.Popen:
  """A child process of this script, once it printed READY."""
  child = subprocess.Popen([sys.executable, os.path.abspath(__file__)] + command,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  if child.stdout.readline().strip() != 'READY':
    child.kill()
    raise RuntimeError(f'{command[0]} did not start (exit status {child.wait(60)}).')
  return child


def _stop(child: subprocess.Popen) -> str:
  """Closes a child's stdin; its remaining output."""
  try:
    output, _ = child.communicate(timeout=60)
  except subprocess.TimeoutExpired:
    child.kill()
    output, _ = child.communicate()
  return output


def _memory_mib(pid: int) -> Dict[str, float]:
  """VmRSS and VmHWM of a process, in MiB."""
  values = {}
  with open(f'/proc/{pid}/status', encoding='ascii') as f:
    for line in f:
      key, _, value = line.partition(':')
      if key in ('VmRSS', 'VmHWM'):
        values[key] = int(value.split()[0]) / 1024
  return values


def _request(size: int) -> bytes:
  """A CallRequest of about `size` bytes for `small`: one uint8 tensor (of the wrong shape)."""
  from seed_rl.grpc import service_pb2  # pylint: disable=g-import-not-at-top
  content = bytes(size - _HEADER_ROOM)
  return service_pb2.CallRequest(function='small', tensor=[service_pb2.Tensor(
      dtype=service_pb2.DT_UINT8, shape=[len(content)], content=content)]).SerializeToString()


def _send(address: str, request: bytes, count: int, outcomes: List[str]) -> None:
  """One sender: its own connection, one stream, `count` requests; notes what came back."""
  import grpc as grpcio  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import service_pb2  # pylint: disable=g-import-not-at-top
  limit = len(request) + _MIB
  channel = grpcio.insecure_channel(address, options=[
      ('grpc.max_send_message_length', limit), ('grpc.max_receive_message_length', limit)])
  try:
    call = channel.stream_stream(_CALL, request_serializer=None, response_deserializer=None)
    for data in call(iter([request] * count), timeout=120, wait_for_ready=True):
      response = service_pb2.CallResponse.FromString(data)
      outcomes.append(f'response status {response.status_code}')
  except grpcio.RpcError as e:
    outcomes.append(f'{e.code().name}: {e.details()}')
  finally:
    channel.close()


def _hold(address: str, request: bytes, count: int) -> Callable[[], None]:
  """One held stream: one row of `wait` (its batch never fills, so the server's handler of the
  stream waits and reads nothing more), then `count` requests pushed behind it; returns what
  closes the stream."""
  import grpc as grpcio  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import service_pb2  # pylint: disable=g-import-not-at-top
  row = service_pb2.CallRequest(function='wait', tensor=[service_pb2.Tensor(
      dtype=service_pb2.DT_INT32, shape=[1], content=bytes(4))]).SerializeToString()
  limit = len(request) + _MIB
  channel = grpcio.insecure_channel(address, options=[('grpc.max_send_message_length', limit)])
  requests: queue.SimpleQueue = queue.SimpleQueue()
  call = channel.stream_stream(_CALL, request_serializer=None, response_deserializer=None)(
      iter(requests.get, None), timeout=120, wait_for_ready=True)
  for data in [row] + [request] * count:
    requests.put(data)

  def close():
    requests.put(None)
    call.cancel()
    channel.close()
  return close


def _send_all(address: str, request: bytes, streams: int, count: int,
              held: bool) -> Tuple[List[str], List[Callable[[], None]]]:
  """Sends from `streams` streams at once. Returns what the senders got back, and what closes
  the held streams (after the server's memory is read; they get nothing back)."""
  if held:
    closers = [_hold(address, request, count) for _ in range(streams)]
    time.sleep(_HOLD_SECONDS)
    return [f'held {count} requests behind a waiting row'] * streams, closers
  outcomes: List[str] = []
  senders = [threading.Thread(target=_send, args=(address, request, count, outcomes))
             for _ in range(streams)]
  for sender in senders:
    sender.start()
  for sender in senders:
    sender.join()
  return outcomes, []


def probe(streams: int, requests: int, request_mib: float, max_message_length: Optional[int],
          options: Sequence[Tuple[str, int]] = (), held: bool = False) -> Dict[str, object]:
  """Runs the probe against a fresh server process (`Server` keywords `max_message_length`
  and `options`); returns its figures."""
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  directory = tempfile.mkdtemp(prefix='sgmem', dir='/tmp')
  address = f'unix:{directory}/server.sock'
  command = ['--serve', address, '--server_options', json.dumps(options)]
  if max_message_length is not None:
    command += ['--max_message_length', str(max_message_length)]
  children = [_start(command)]
  try:
    server = children[0]
    request = _request(int(request_mib * _MIB))
    children.append(_start(['--good_client', address]))
    time.sleep(0.5)
    before = _memory_mib(server.pid)
    start = time.monotonic()
    outcomes, closers = _send_all(address, request, streams, requests, held)
    seconds = time.monotonic() - start
    during = json.loads(_stop(children.pop()))
    peak = _memory_mib(server.pid)['VmHWM']
    for close in closers:
      close()
    time.sleep(3)
    later = _memory_mib(server.pid)['VmRSS']
    with grpc.Client(address, timeout=60) as good:
      served_after = int(sum(good.small(i) == i + 1 for i in range(10)))
    return {
        'max_message_length': max_message_length,
        'request_bytes': len(request),
        'rss_before_mib': round(before['VmRSS'], 1),
        'peak_rise_mib': round(peak - before['VmRSS'], 1),
        'rise_3s_later_mib': round(later - before['VmRSS'], 1),
        'sender_outcomes': dict(collections.Counter(outcomes)),
        'seconds': round(seconds, 2),
        'good_calls_during': during['calls'],
        'good_longest_wait_s': during['longest_wait_s'],
        'good_failures_during': during['failures'],
        'good_calls_after': served_after,
    }
  finally:
    for child in children:
      _stop(child)
    for name in os.listdir(directory):
      os.unlink(os.path.join(directory, name))
    os.rmdir(directory)


def _row(name: str, result: Dict[str, object]) -> str:
  outcomes = '; '.join(f'{n} x {o}' for o, n in result['sender_outcomes'].items())
  return (f'| {name} | {result["peak_rise_mib"]} | {result["rise_3s_later_mib"]} | '
          f'{result["good_calls_during"]} in {result["seconds"]} s, longest wait '
          f'{result["good_longest_wait_s"]} s | '
          f'{result["good_calls_after"]}/10 | {outcomes} |')


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--streams', type=int, default=16)
  parser.add_argument('--requests', type=int, default=3, help='requests per stream')
  parser.add_argument('--mib', type=float, default=128, help='MiB of each request')
  parser.add_argument('--baseline_limit_mib', type=int, default=128,
                      help='message limit of the baseline server, MiB')
  parser.add_argument('--held', action='store_true',
                      help='each stream first sends a row that waits in a batch that never '
                      'fills, then pushes its requests behind it (what gRPC buffers for a '
                      'stream whose handler is not reading)')
  parser.add_argument('--no_baseline', action='store_true', help='skip the baseline server')
  parser.add_argument('--json', action='store_true', help='one JSON line per server setting')
  parser.add_argument('--serve', help=argparse.SUPPRESS)
  parser.add_argument('--max_message_length', type=int, help=argparse.SUPPRESS)
  parser.add_argument('--server_options', default='[]', help=argparse.SUPPRESS)
  parser.add_argument('--good_client', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.serve:
    _serve(args.serve, args.max_message_length,
           [tuple(option) for option in json.loads(args.server_options)])
    return
  if args.good_client:
    _call_until_stdin_closes(args.good_client)
    return
  settings = [('defaults', None, [])]
  if not args.no_baseline:
    settings.append((f'{args.baseline_limit_mib} MiB limit, growing windows (baseline)',
                     args.baseline_limit_mib * _MIB, _BASELINE_OPTIONS))
  print(f'{args.streams} streams x {args.requests} requests of {args.mib} MiB to a server of '
        f'a small function{", held behind a waiting row" if args.held else ""}', flush=True)
  results = []
  for name, limit, options in settings:
    result = probe(args.streams, args.requests, args.mib, limit, options, args.held)
    results.append(result)
    if args.json:
      print(json.dumps(dict(result, setting=name)), flush=True)
  print('| server | peak rise MiB | rise 3 s later MiB | good calls during | good calls after '
        '| senders got |')
  print('|---|---|---|---|---|---|')
  for (name, _, _), result in zip(settings, results):
    print(_row(name, result))
  if len(results) == 2:
    ratio = results[0]['peak_rise_mib'] / max(results[1]['peak_rise_mib'], 1)
    print(f'peak rise, defaults / baseline: {ratio:.3f}')


if __name__ == '__main__':
  main()
