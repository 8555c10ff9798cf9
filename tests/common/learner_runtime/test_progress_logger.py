"""Tests of seed_rl.common.learner_runtime.progress_logger."""

import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import progress_logger
from tests.common.summaries import read_scalars

pytestmark = pytest.mark.timeout(120)


@pytest.mark.timeout(60)
def test_progress_logger_writes_step_values_and_speed(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  logger = progress_logger.ProgressLogger(writer, initial_period=0.05, starting_step=100)
  callbacks = []
  logger.start(lambda: callbacks.append(1))

  @tf.function
  def train_step(x):
    session = logger.log_session()
    logger.log(session, 'loss', x * 2)
    logger.log(session, 'mean', tf.constant([1., 3.]))
    logger.step_end(session, step_increment=10)

  train_step(tf.constant(1.5))
  assert logger.step_cnt.numpy() == 110
  np.testing.assert_allclose(logger.ready_values.numpy(), [3., 2.])
  # The callback runs on every wake-up, before the write: once it has run three more times,
  # a wake-up that read the step after train_step has written.
  seen = len(callbacks)
  deadline = time.time() + 20
  while len(callbacks) < seen + 3 and time.time() < deadline:
    time.sleep(0.02)
  train_step(tf.constant(2.))
  time.sleep(0.3)
  logger.shutdown()
  writer.flush()
  assert callbacks

  scalars = read_scalars(tmp_path)
  assert scalars['loss'][0] == (110, 3.0)
  assert scalars['loss'][-1] == (120, 4.0)
  assert scalars['mean'][0] == (110, 2.0)
  assert scalars['speed/steps_per_sec'] and scalars['speed/steps_per_sec'][0][0] == 120


def test_progress_logger_requires_consistent_sessions():
  logger = progress_logger.ProgressLogger()
  logger.step_end(logger.log_session_from_dict({'a': 1.}))
  with pytest.raises(ValueError, match='same names'):
    logger.step_end(logger.log_session_from_dict({'b': 1.}))


@pytest.mark.timeout(30)
def test_progress_logger_without_summary_writer_starts_logs_and_shuts_down():
  logger = progress_logger.ProgressLogger(initial_period=0.01)
  logger.start()
  session = logger.log_session()
  logger.log(session, 'loss', tf.constant(2.))
  logger.step_end(session, step_increment=3)
  time.sleep(0.1)
  logger.shutdown()
  assert logger.step_cnt.numpy() == 3 and logger.logger_thread is None
  np.testing.assert_allclose(logger.ready_values.numpy(), [2.])


@pytest.mark.timeout(30)
def test_the_callback_runs_while_no_step_ends_and_nothing_is_written(tmp_path):
  """What happens while training waits (e.g. for the replay to fill) is reported on time."""
  writer = tf.summary.create_file_writer(str(tmp_path))
  logger = progress_logger.ProgressLogger(writer, initial_period=0.01, max_period=0.02)
  callbacks = []
  logger.start(lambda: callbacks.append(1))
  deadline = time.time() + 20
  while len(callbacks) < 3 and time.time() < deadline:
    time.sleep(0.01)
  logger.shutdown()
  writer.flush()
  assert len(callbacks) >= 3
  assert read_scalars(tmp_path) == {}


@pytest.mark.timeout(60)
def test_without_a_summary_writer_log_writes_to_the_callers_default_writer(tmp_path):
  """As the original's `ProgressLogger()`: `_log` works with no writer of its own, before and
  after steps, and its scalars go to the default writer of the thread that logs."""
  logger = progress_logger.ProgressLogger(initial_period=60.)  # Its thread logs at shutdown.
  callbacks = []
  logger.start(lambda: callbacks.append(1))
  logger._log()  # pylint: disable=protected-access

  @tf.function(input_signature=(tf.TensorSpec([], tf.int32, 'value'),))
  def log_something(value):
    session = logger.log_session()
    logger.log(session, 'value_1', value)
    logger.log(session, 'value_2', value + 1)
    logger.step_end(session)

  log_something(tf.constant(10))
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default():
    logger._log()  # pylint: disable=protected-access
  np.testing.assert_array_equal(logger.ready_values.read_value(), [10., 11.])
  log_something(tf.constant(15))
  np.testing.assert_array_equal(logger.ready_values.read_value(), [15., 16.])
  logger._log()  # pylint: disable=protected-access  (no default writer here: nothing written)
  logger.shutdown()
  writer.flush()
  assert callbacks
  scalars = read_scalars(tmp_path)
  assert scalars['value_1'] == [(1, 10.0)] and scalars['value_2'] == [(1, 11.0)]
