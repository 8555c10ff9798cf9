"""The network's compute alone, shared the way the learner shares the machine: inference calls
and training steps at the same time, coupled as the learner's unroll queue couples them.

A SEED learner runs inference batches in the server's threads (one batch in flight per group of
actors that fills it) while a training step runs in its own thread; acting may run ahead of
training only by the unrolls the environments are filling and those the queue holds. Timing the
two one after the other (`bench.ceiling.ceiling_frames_per_sec`) leaves out what running them
together gains (one op's threads idle while another's run) or loses (contention). This module
runs them together on plain callables and measures the frames/s training then consumes.

The coupling: every inference call makes `frames_per_inference` frames available; the training
thread gathers available frames until it has one step's worth, then runs the step; inference
threads wait while `frames_ahead` frames or more wait to be gathered. Imports no TensorFlow.
"""

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from typing import Any

# Training steps timed at least, whatever `seconds` says (each after a warm-up).
_MIN_TIMED_STEPS = 3
# Seconds a thread may take to finish its call once the measurement stops.
_JOIN_TIMEOUT_S = 120.


@dataclasses.dataclass(frozen=True)
class OverlappedRun:
  """What `measure` saw.

  Attributes:
    frames_per_sec: frames consumed by training per second, between the first and the last
      training step completed in the timed window.
    training_busy: share of that time the training thread spent in training steps (near 1:
      training is the bottleneck; lower: it waited for acting).
    inference_busy: share of that time each inference thread spent in calls, on average.
    training_steps: training steps timed.
    inference_call_median_secs, inference_call_p99_secs, inference_call_max_secs: how long the
      inference calls that ended in that time took: a call that waits for the training step's
      work (e.g. for threads TensorFlow shares between them) shows in the tail, where the
      actors of a pipeline wait for their actions.
    cores_busy: CPU seconds the process (all its threads) used per second in that time: how
      many of the machine's cores the compute kept busy; over `frames_per_sec`, the CPU time
      one frame's compute costs.
  """
  frames_per_sec: float
  training_busy: float
  inference_busy: float
  training_steps: int
  inference_call_median_secs: float
  inference_call_p99_secs: float
  inference_call_max_secs: float
  cores_busy: float


class _Coupling:
  """The frames acted and not yet trained on, shared by the inference and training threads."""

  def __init__(self, frames_ahead: int):
    self.condition = threading.Condition()
    self.frames_ahead = frames_ahead
    self.available = 0
    self.stopped = False
    self.error: BaseException | None = None

  def stop(self, error: BaseException | None = None) -> None:
    with self.condition:
      self.stopped = True
      if error is not None and self.error is None:
        self.error = error
      self.condition.notify_all()


def _timed(call: Callable[[], Any]) -> tuple[float, float]:
  start = time.perf_counter()
  call()
  return start, time.perf_counter()


def _inference_loop(coupling: _Coupling, infer: Callable[[], Any], frames_per_inference: int,
                    busy: list[tuple[float, float]]) -> None:
  try:
    condition = coupling.condition
    while True:
      with condition:
        while not coupling.stopped and coupling.available >= coupling.frames_ahead:
          condition.wait()
        if coupling.stopped:
          return
      busy.append(_timed(infer))
      with condition:
        coupling.available += frames_per_inference
        condition.notify_all()
  except BaseException as e:  # pylint: disable=broad-except
    coupling.stop(e)


def _training_loop(coupling: _Coupling, train: Callable[[], Any], frames_per_training_step: int,
                   busy: list[tuple[float, float]], cpu_at_ends: list[float]) -> None:
  try:
    condition = coupling.condition
    while True:
      gathered = 0
      with condition:
        while gathered < frames_per_training_step:
          while not coupling.stopped and not coupling.available:
            condition.wait()
          if coupling.stopped:
            return
          taken = min(coupling.available, frames_per_training_step - gathered)
          coupling.available -= taken
          gathered += taken
          condition.notify_all()
      busy.append(_timed(train))
      cpu_at_ends.append(time.process_time())
  except BaseException as e:  # pylint: disable=broad-except
    coupling.stop(e)


def _quantile(values: list[float], q: float) -> float:
  """The `q`-quantile of `values` (not empty), nearest rank."""
  ordered = sorted(values)
  return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _busy_share(intervals: list[tuple[float, float]], start: float, end: float) -> float:
  """Share of [start, end] covered by the (disjoint) intervals."""
  covered = sum(max(0., min(b, end) - max(a, start)) for a, b in intervals)
  return covered / (end - start)


def measure(infer: Callable[[], Any], train: Callable[[], Any], *, frames_per_inference: int,
            frames_per_training_step: int, inference_threads: int, frames_ahead: int,
            seconds: float, warmup_secs: float = 1.) -> OverlappedRun:
  """Runs `infer` in `inference_threads` threads beside `train` in one, coupled (see the module
  docstring), for `warmup_secs` and then at least `seconds` and `_MIN_TIMED_STEPS` training
  steps. Both callables must have run once already (tracing is not timed) and be safe to call
  from several threads (`infer`) at once.

  Raises:
    ValueError: a count is not positive, or `frames_ahead` is less than one inference call's
      frames (acting could never start).
    Whatever `infer` or `train` raised.
  """
  if min(frames_per_inference, frames_per_training_step, inference_threads) <= 0:
    raise ValueError('frames per call and step and the inference threads must be positive, got '
                     f'{frames_per_inference}, {frames_per_training_step}, {inference_threads}')
  if frames_ahead < frames_per_inference:
    raise ValueError(f'frames_ahead ({frames_ahead}) must hold at least one inference call\'s '
                     f'{frames_per_inference} frames')
  coupling = _Coupling(frames_ahead)
  inference_busy = [[] for _ in range(inference_threads)]
  training_busy, training_cpu_at_ends = [], []
  threads = [threading.Thread(target=_inference_loop, daemon=True,
                              args=(coupling, infer, frames_per_inference, busy))
             for busy in inference_busy]
  threads.append(threading.Thread(target=_training_loop, daemon=True,
                                  args=(coupling, train, frames_per_training_step,
                                        training_busy, training_cpu_at_ends)))
  for thread in threads:
    thread.start()
  try:
    window_start = time.perf_counter() + warmup_secs
    deadline = window_start + seconds
    while not coupling.stopped:
      now = time.perf_counter()
      timed = [end for _, end in list(training_busy) if end >= window_start]
      if now >= deadline and len(timed) > _MIN_TIMED_STEPS:
        break
      time.sleep(0.05)
  finally:
    coupling.stop()
    for thread in threads:
      thread.join(_JOIN_TIMEOUT_S)
  if coupling.error is not None:
    raise coupling.error
  timed_steps = [i for i, (_, end) in enumerate(training_busy) if end >= window_start]
  first, last = training_busy[timed_steps[0]][1], training_busy[timed_steps[-1]][1]
  steps = len(timed_steps) - 1  # The steps completed after the first one's end.
  calls = [end - start for busy in inference_busy for start, end in busy
           if first <= end <= last] or [0.]
  return OverlappedRun(
      frames_per_sec=steps * frames_per_training_step / (last - first),
      training_busy=_busy_share(training_busy, first, last),
      inference_busy=sum(_busy_share(busy, first, last)
                         for busy in inference_busy) / inference_threads,
      training_steps=steps,
      inference_call_median_secs=_quantile(calls, 0.5),
      inference_call_p99_secs=_quantile(calls, 0.99),
      inference_call_max_secs=max(calls),
      cores_busy=(training_cpu_at_ends[timed_steps[-1]] -
                  training_cpu_at_ends[timed_steps[0]]) / (last - first))
