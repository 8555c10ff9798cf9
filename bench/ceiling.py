r"""The compute-only ceiling of an end-to-end run: its network's inference and training alone.

The learner of a SEED pipeline runs the network twice for every environment step: once in an
inference batch (the actors' actions) and once in a training step. `bench.ceiling_measurement`
times both on synthetic inputs of the pipeline's shapes (no environment, no RPC), one after the
other and then at once (`bench.overlapped_compute`), and this module turns the two timings into
the frames/s of a machine that did one thing at a time:

  ceiling = 1 / (inference_secs / frames_per_inference
                 + training_step_secs / frames_per_training_step)

- `frames_per_inference = inference_batch_size x num_action_repeats`: one inference call serves
  one env step of each of its rows, and an env step is `num_action_repeats` frames.
- `frames_per_training_step = unrolls_per_iteration x unroll_length x num_action_repeats`: the
  new frames one training step consumes, as the learner counts them (V-trace: `batch_size`
  unrolls; R2D2: `batch_size / replay_ratio` new unrolls, each replayed `replay_ratio` times on
  average; burn-in and bootstrap steps overlap the neighbouring unrolls and are not new frames).

The ceiling of a run is the better of that and the frames/s of the two at once. End-to-end
frames/s divided by it is the share of the network-compute bound that the pipeline reaches on
the machine; the rest is environments, RPC and bookkeeping competing for the same CPUs. The
bench's Atari entry points (`bench/atari_*_main.py`) measure it with `--measure_ceiling_secs`
and print one line (`LINE_PREFIX` and JSON) that `parse_line` reads.

This module imports no TensorFlow (actors import the entry points too).
"""

import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Optional

LINE_PREFIX = 'compute ceiling: '


def ceiling_frames_per_sec(inference_secs: float, frames_per_inference: float,
                           training_step_secs: float, frames_per_training_step: float) -> float:
  """Frames/s if each frame cost only its share of an inference call and of a training step.

  Raises:
    ValueError: a timing is negative, a frame count not positive, or both timings are 0.
  """
  if min(frames_per_inference, frames_per_training_step) <= 0:
    raise ValueError(f'frame counts must be positive, got {frames_per_inference} and '
                     f'{frames_per_training_step}')
  if min(inference_secs, training_step_secs) < 0 or inference_secs + training_step_secs == 0:
    raise ValueError(f'timings must be non-negative and not both 0, got {inference_secs} and '
                     f'{training_step_secs}')
  return 1. / (inference_secs / frames_per_inference +
               training_step_secs / frames_per_training_step)


def shared_cores_frames_per_sec(compute_frames_per_sec: float,
                                 raw_env_frames_per_sec: float) -> float:
  """Frames/s of a machine whose cores do both the network's compute and the environments'
  steps, one after the other: each frame costs its share of both.

  The bound a pipeline whose actors share the learner's cores can reach, if the ceiling and the
  raw env rate were each measured filling the machine (actors at least as many as cores): a
  2-core machine whose envs alone step at 37,000 frames/s and whose network alone allows 14,500
  cannot pass 10,400. Where the actors have cores of their own the pipeline can exceed it.

  Raises:
    ValueError: a rate is not positive.
  """
  if min(compute_frames_per_sec, raw_env_frames_per_sec) <= 0:
    raise ValueError(f'rates must be positive, got {compute_frames_per_sec} and '
                     f'{raw_env_frames_per_sec}')
  return 1. / (1. / compute_frames_per_sec + 1. / raw_env_frames_per_sec)


def cpu_time_frames_per_sec(cores: float, compute_frames_per_sec: float,
                            compute_cores_busy: float, raw_env_frames_per_sec: float,
                            env_cores_busy: float) -> float:
  """Frames/s of `cores` cores if each frame cost only the CPU time its share of the network's
  compute and of a raw env step took when each was measured alone, at most the compute's own
  rate.

  `shared_cores_frames_per_sec` counts wall time and so assumes both measurements filled every
  core; this counts CPU time (`cores_busy` CPU seconds per second at the measured rate), so a
  compute that leaves cores idle, e.g. a training step on one thread, leaves that time to the
  envs. The bound no pipeline on these cores can pass while the compute and the env steps cost
  it what they cost alone.

  Raises:
    ValueError: a rate, a busy share or `cores` is not positive.
  """
  if min(cores, compute_frames_per_sec, compute_cores_busy, raw_env_frames_per_sec,
         env_cores_busy) <= 0:
    raise ValueError(f'cores, rates and busy shares must be positive, got {cores}, '
                     f'{compute_frames_per_sec}, {compute_cores_busy}, '
                     f'{raw_env_frames_per_sec}, {env_cores_busy}')
  cpu_secs_per_frame = (compute_cores_busy / compute_frames_per_sec +
                        env_cores_busy / raw_env_frames_per_sec)
  return min(compute_frames_per_sec, cores / cpu_secs_per_frame)


def parse_line(text: str) -> Optional[dict]:
  """The measurement of the last `LINE_PREFIX` line of `text` (a process's output), or None."""
  lines = [line for line in text.splitlines() if line.startswith(LINE_PREFIX)]
  return json.loads(lines[-1][len(LINE_PREFIX):]) if lines else None


def run_or_measure(argv: Sequence[str], measure_secs: float,
                   create_env_fn: Callable[[int, Any], Any], learner_module: str,
                   agent_class: str, create_agent_fn: Callable[..., Any],
                   create_optimizer_fn: Callable[[int], Any], config: Any) -> None:
  """What a bench entry point's `main` does: without `measure_secs` (0) the usual learner or
  actor (`entry_point.run`); with it, no pipeline: time the agent's network for `measure_secs`
  per part (inference, training, both at once) and print the `LINE_PREFIX` line.

  Args:
    argv: the arguments left by absl (only the program name is allowed).
    measure_secs: seconds of each timed part; 0: run.
    create_env_fn, learner_module, create_agent_fn, create_optimizer_fn: as `entry_point.run`.
    agent_class: the name of the `LearnerAgent` class of `learner_module` (e.g. 'VTraceAgent'),
      created on `create_agent_fn` and `config` in measuring mode only.
    config: the learner's flags (absl `FLAGS`).
  """
  # pylint: disable=g-import-not-at-top
  from absl import app
  from seed_rl.common import entry_point
  # pylint: enable=g-import-not-at-top
  if measure_secs <= 0:
    entry_point.run(argv, create_env_fn, learner_module, create_agent_fn, create_optimizer_fn)
    return
  if len(argv) > 1:
    raise app.UsageError(f'Too many command-line arguments: {list(argv[1:])}')
  from bench import ceiling_measurement  # pylint: disable=g-import-not-at-top
  agent = getattr(importlib.import_module(learner_module), agent_class)(create_agent_fn, config)
  result = ceiling_measurement.measure(agent, create_env_fn, create_optimizer_fn, config,
                                       measure_secs)
  print(LINE_PREFIX + json.dumps(result), flush=True)
