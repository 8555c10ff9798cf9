"""Raw environment throughput: the ceiling for an end-to-end SEED run.

`raw_env_frames_per_sec` runs N processes that only step an environment with
random actions (no RPC, no inference), and reports the aggregate env steps/s
and frames/s (steps x num_action_repeats). End-to-end benchmarks divide their
own figures by this one, measured in the same run, to get a machine-independent
efficiency ratio.

Usage:
  python -m bench.raw_env [--game Pong] [--seconds 5] [--num_processes 1 2]
"""

import argparse
import multiprocessing
import time
from collections.abc import Callable
from typing import Any

import numpy as np

# Wait this long for the workers to create their environments.
_STARTUP_TIMEOUT_S = 120.0


def _worker(create_env_fn: Callable[[int, Any], Any], config: Any,
            env_id: int, seconds: float, barrier: Any, results: Any) -> None:
  """Creates one env, waits for all workers, then steps it for `seconds`."""
  try:
    env = create_env_fn(env_id, config)
    env.action_space.seed(env_id)
    env.reset(seed=env_id)
    barrier.wait(timeout=_STARTUP_TIMEOUT_S)
    steps = 0
    cpu_start = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
      # Check the clock every 16 steps to keep its cost out of the figure.
      for _ in range(16):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
          env.reset()
      now = time.perf_counter()
      if now >= deadline:
        break
    cores_busy = (time.process_time() - cpu_start) / (now - start)
    env.close()
    results.put((env_id, steps, now - start, cores_busy, None))
  except Exception as e:  # noqa: BLE001  (reported to the parent)
    barrier.abort()  # Release the other workers instead of a timeout.
    results.put((env_id, 0, 0.0, 0.0, f'{type(e).__name__}: {e}'))


def raw_env_frames_per_sec(create_env_fn: Callable[[int, Any], Any],
                           config: Any,
                           num_processes: int,
                           seconds: float,
                           num_action_repeats: int = 1) -> dict[str, float]:
  """Measures aggregate env throughput of `num_processes` stepping processes.

  Args:
    create_env_fn: `(env_id, config) -> gymnasium env`, picklable (a module-level
      function), e.g. `seed_rl.environments.atari.env.create_environment`.
    config: picklable object passed to `create_env_fn` (e.g. an
      `AtariConfig`).
    num_processes: number of processes, one env each (env ids 0..N-1).
    seconds: stepping time per process, after all envs are created.
    num_action_repeats: frames per step of the env (its config's), which
      converts steps to frames.

  Returns:
    dict with `steps_per_sec` and `frames_per_sec` (sums over processes of
    each process's own rate), `cores_busy` (the sum of each process's CPU
    seconds per second of stepping: below `num_processes` where the processes
    wait for a core), `num_processes` and `seconds`.

  Raises:
    ValueError: on non-positive `num_processes` or `seconds`.
    RuntimeError: if a worker fails (its error is included) or hangs.
  """
  if num_processes < 1:
    raise ValueError(f'num_processes must be >= 1, got {num_processes}')
  if seconds <= 0:
    raise ValueError(f'seconds must be positive, got {seconds}')
  ctx = multiprocessing.get_context('spawn')  # No state shared with parent.
  barrier = ctx.Barrier(num_processes)
  results = ctx.Queue()
  workers = [
      ctx.Process(target=_worker,
                  args=(create_env_fn, config, env_id, seconds, barrier, results),
                  daemon=True)
      for env_id in range(num_processes)
  ]
  for w in workers:
    w.start()
  rates = []
  cores_busy = []
  errors = []
  try:
    for _ in workers:
      env_id, steps, elapsed, cores, error = results.get(
          timeout=_STARTUP_TIMEOUT_S + seconds + 30)
      if error:
        errors.append(f'worker {env_id}: {error}')
      else:
        rates.append(steps / elapsed)
        cores_busy.append(cores)
  finally:
    for w in workers:
      w.join(timeout=10)
      if w.is_alive():
        w.terminate()
        w.join()
  if errors:
    raise RuntimeError('raw env benchmark failed: ' + '; '.join(errors))
  steps_per_sec = float(np.sum(rates))
  return {
      'steps_per_sec': steps_per_sec,
      'frames_per_sec': steps_per_sec * num_action_repeats,
      'cores_busy': float(np.sum(cores_busy)),
      'num_processes': num_processes,
      'seconds': seconds,
  }


def main() -> None:
  # Imported here so that importing this module stays cheap.
  from seed_rl.environments.atari import env as atari_env  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.atari import env_config  # pylint: disable=g-import-not-at-top

  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--game', default='Pong')
  parser.add_argument('--seconds', type=float, default=5.0)
  parser.add_argument('--num_processes', type=int, nargs='+', default=[1, 2])
  parser.add_argument('--num_action_repeats', type=int,
                      default=atari_env.ATARI_DEFAULT_NUM_ACTION_REPEATS)
  args = parser.parse_args()
  config = env_config.AtariConfig(
      game=args.game, max_random_noops=30, sticky_actions=False,
      num_action_repeats=args.num_action_repeats)
  print(f'Raw Atari {args.game}, frame skip {args.num_action_repeats}, '
        f'random actions, {args.seconds:g} s per run')
  baseline = None
  for n in args.num_processes:
    r = raw_env_frames_per_sec(atari_env.create_environment, config, n,
                               args.seconds, config.num_action_repeats)
    baseline = baseline or r['steps_per_sec']
    print(f'  processes={n}: {r["steps_per_sec"]:8.0f} env steps/s '
          f'{r["frames_per_sec"]:8.0f} frames/s  '
          f'(x{r["steps_per_sec"] / baseline:.2f} vs '
          f'{args.num_processes[0]} process(es))')


if __name__ == '__main__':
  main()
