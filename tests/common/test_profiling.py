"""Tests of seed_rl.common.profiling."""

import time

import pytest
import tensorflow as tf

from seed_rl.common import profiling
from tests.common.summaries import read_scalars

pytestmark = pytest.mark.timeout(60)


def test_running_mean_average_and_reset():
  assert profiling.Aggregator is profiling.RunningMean  # The original's name.
  agg = profiling.RunningMean()
  assert agg.average() == 0.0
  for value in (1., 2., 6.):
    agg.add(value)
  assert (agg.sum(), agg.count(), agg.average()) == (9., 3, 3.)
  agg.reset()
  assert agg.count() == 0


def test_exporting_timer_writes_the_window_mean(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default(step=5):
    for _ in range(4):
      with profiling.ExportingTimer('test/elapsed_s', aggregation_window_size=2):
        time.sleep(0.01)
  writer.flush()
  scalars = read_scalars(tmp_path)
  assert len(scalars['test/elapsed_s']) == 2
  for step, value in scalars['test/elapsed_s']:
    assert step == 5 and 0.009 < value < 1.0
