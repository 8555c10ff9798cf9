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
(`bench.ceiling_mode`) and print one line (`format_line`) that `parse_line` reads.

This module is the arithmetic and the report line only; it imports no TensorFlow.
"""

import json
from typing import Optional

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
  raw env rate were each measured filling the machine (actors at least as many as cores): e.g.
  envs that alone step at 30,000 frames/s and a network that alone allows 15,000 leave at most
  10,000. Where the actors have cores of their own the pipeline can exceed it.

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


def format_line(measurement: dict) -> str:
  """The one line (`LINE_PREFIX` and JSON) by which a process reports `measurement`."""
  return LINE_PREFIX + json.dumps(measurement)


def parse_line(text: str) -> Optional[dict]:
  """The measurement of the last `LINE_PREFIX` line of `text` (a process's output), or None."""
  lines = [line for line in text.splitlines() if line.startswith(LINE_PREFIX)]
  return json.loads(lines[-1][len(LINE_PREFIX):]) if lines else None
