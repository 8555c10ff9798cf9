"""Skipped optimizer steps and refused state updates are logged, rate-limited, and summed up
for the learner's progress line."""

import logging as std_logging
import time

import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import running_statistics as rs
from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import training

pytestmark = pytest.mark.timeout(60)


class _LinearAgent(agent_lib.LearnerAgent):
  """loss = mean(w * batch): a NaN in the batch makes the step non-finite."""

  def compute_loss(self, batch):
    loss = tf.reduce_mean(self.network.w * batch)
    return loss, {'loss': loss}


def _minimize(logger: progress_logger.ProgressLogger):
  agent = _LinearAgent(config=None)
  agent.network = tf.Module()
  agent.network.w = tf.Variable(1.0)
  optimizer = tf.keras.optimizers.SGD(0.1)
  optimizer.build(agent.trainable_variables)
  return training.create_minimize(tf.distribute.get_strategy(), agent, optimizer, logger)


def _warnings(caplog):
  return [r.getMessage() for r in caplog.records if r.levelno == std_logging.WARNING]


def _wait_for(condition, timeout=20.):
  deadline = time.monotonic() + timeout
  while not condition():
    assert time.monotonic() < deadline, 'timed out'
    time.sleep(.02)


def test_a_skipped_step_is_logged_by_the_logging_thread_and_summed_up(caplog):
  caplog.set_level(std_logging.WARNING)
  logger = progress_logger.ProgressLogger(initial_period=.01, max_period=.05)
  minimize = _minimize(logger)
  minimize(tf.constant([1., 2.]))
  assert 'skipped optimizer steps' not in logger.counts_summary()
  logger.start()
  try:
    minimize(tf.constant([1., float('nan')]))
    _wait_for(lambda: any('skipped optimizer steps' in m for m in _warnings(caplog)))
  finally:
    logger.shutdown()
  (warning,) = [m for m in _warnings(caplog) if 'skipped optimizer steps' in m]
  assert warning.startswith(training.NON_FINITE_WARNING)
  assert '1 skipped optimizer steps' in warning
  assert '1 skipped optimizer steps' in logger.counts_summary()


def test_a_refused_state_update_is_in_the_same_warning_and_summary(caplog):
  caplog.set_level(std_logging.WARNING)
  logger = progress_logger.ProgressLogger()
  _minimize(logger)
  tracker = rs.AverageMeanStd()
  tracker.init(1)
  tracker.update(tf.constant([[1e30], [-1e30]]))
  logger.count_warnings.check()
  (warning,) = _warnings(caplog)
  assert 'refused running statistics updates' in warning
  assert 'refused running statistics updates' in logger.counts_summary()
  assert 'skipped optimizer steps' not in logger.counts_summary()


def test_warnings_come_at_once_then_at_most_once_a_period(caplog):
  caplog.set_level(std_logging.WARNING)
  counts, now = {'skipped optimizer steps': 0}, [0.]
  warnings = progress_logger.CountWarnings(lambda: counts, 'Refused', period_secs=60.,
                                           clock=lambda: now[0])
  warnings.check()
  assert not _warnings(caplog)
  counts['skipped optimizer steps'] = 1
  warnings.check()
  assert _warnings(caplog) == ['Refused: 1 skipped optimizer steps.']
  for step in range(2, 50):  # Rising for 49 s: no second line.
    counts['skipped optimizer steps'], now[0] = step, float(step)
    warnings.check()
  assert len(_warnings(caplog)) == 1
  now[0] = 61.
  warnings.check()
  assert _warnings(caplog)[1] == (
      'Refused: 49 skipped optimizer steps (since the previous warning: 48 skipped optimizer '
      'steps).')
  now[0] = 500.
  warnings.check()  # Nothing rose: nothing to say.
  assert len(_warnings(caplog)) == 2
  assert warnings.summary() == '49 skipped optimizer steps'
