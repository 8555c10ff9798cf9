"""Wall-time measurement written to TensorBoard as windowed averages.

The learner runtime times its training steps with `ExportingTimer` (`timing/...` summaries).
"""

import time

import tensorflow as tf


class RunningMean(object):
  """Running sum and count of scalar samples."""

  def __init__(self):
    self.reset()

  def reset(self) -> None:
    self._sum = 0.0
    self._count = 0

  def add(self, value: float) -> None:
    self._sum += value
    self._count += 1

  def sum(self) -> float:
    return self._sum

  def count(self) -> int:
    return self._count

  def average(self) -> float:
    return self._sum / self._count if self._count else 0.0


# The original's name.
Aggregator = RunningMean


class ExportingTimer(object):
  """Context manager timing its body; every `aggregation_window_size` uses it writes the mean.

  Timers with the same `summary_name` share one window (a class-level registry), so a timer
  created afresh in a loop still averages over the loop. Not thread-safe.
  """

  _aggregators = {}

  def __init__(self, summary_name: str, aggregation_window_size: int):
    self.summary_name = summary_name
    self.aggregation_window_size = aggregation_window_size
    self._start = None

  def __enter__(self):
    self._start = time.time()
    return self

  def __exit__(self, *exc_info):
    elapsed = time.time() - self._start
    aggregator = ExportingTimer._aggregators.setdefault(self.summary_name, RunningMean())
    aggregator.add(elapsed)
    if aggregator.count() >= self.aggregation_window_size:
      tf.summary.scalar(self.summary_name, aggregator.average())
      aggregator.reset()
    return False
