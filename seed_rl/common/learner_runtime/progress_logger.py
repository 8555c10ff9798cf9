"""Scalars produced inside tf.functions, written to TensorBoard from a background thread."""

import contextlib
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from absl import logging
import tensorflow as tf

# Seconds between two warnings of `CountWarnings` after its first one.
WARNING_PERIOD_SECS = 60.


def describe_counts(counts: Mapping[str, int]) -> str:
  """'3 skipped optimizer steps, 20 refused replay rows': the non-zero counts, '' if none."""
  return ', '.join(f'{count:,} {name}' for name, count in counts.items() if count)


class CountWarnings(object):
  """Warns when counters rise: at once the first time, then at most once per `period_secs`,
  with every total and what each one rose by since the previous warning.

  `read_counts()` returns `{name: total}`, names read as the counted things ('skipped
  optimizer steps'). Not thread-safe: one thread calls `check`.
  """

  def __init__(self, read_counts: Callable[[], Mapping[str, int]], message: str,
               period_secs: float = WARNING_PERIOD_SECS,
               clock: Callable[[], float] = time.monotonic):
    self._read_counts = read_counts
    self._message = message
    self._period_secs = period_secs
    self._clock = clock
    self._warned: Dict[str, int] = {}
    self._last_warning = None

  def check(self) -> Dict[str, int]:
    """Warns if a count rose since the last warning and the period allows a warning now;
    returns the counts read."""
    counts = dict(self._read_counts())
    rises = {name: count - self._warned.get(name, 0) for name, count in counts.items()
             if count > self._warned.get(name, 0)}
    now = self._clock()
    if not rises or (self._last_warning is not None and
                     now - self._last_warning < self._period_secs):
      return counts
    since = ('' if self._last_warning is None else
             f' (since the previous warning: {describe_counts(rises)})')
    logging.warning('%s: %s%s.', self._message, describe_counts(counts), since)
    self._warned, self._last_warning = counts, now
    return counts

  def summary(self) -> str:
    """The current non-zero totals, as `describe_counts` writes them."""
    return describe_counts(self._read_counts())


class ProgressLogger(object):
  """Writes the scalars of the latest training step to TensorBoard from a background thread.

  Training code registers values with `log(session, name, value)` (at trace time) and calls
  `step_end` at the end of each step (inside its tf.function); a thread wakes up with a period
  growing from `initial_period` to `max_period`, runs the logging callback at the current step
  every time (also while no step ends, e.g. while training waits for data, so that what happens
  meanwhile is reported on time), and when the step advanced since its last write, writes every
  value and `speed/steps_per_sec` (steps per second since the previous write). Steps are
  whatever `step_end` counts (learners count env frames).

  Without a `summary_writer` the scalars go to the default writer of the thread that logs
  (`tf.summary.create_file_writer(...).as_default()`), and nowhere if it has none: values
  are still collected and the callback still runs.

  Counters that must not rise unnoticed (skipped optimizer steps, refused state updates) are
  watched with `watch_counts`: every wake-up checks them and logs a rate-limited warning when
  one rose; they are written with the other values (as `non_finite/<name>`), and
  `counts_summary()` gives their totals for a progress line.
  """

  def __init__(self, summary_writer=None, initial_period: float = 0.1,
               period_factor: float = 1.01, max_period: float = 10.0,
               starting_step: int = 0):
    self.summary_writer = summary_writer
    self.initial_period = initial_period
    self.period_factor = period_factor
    self.max_period = max_period
    self.log_keys = []
    self.step_cnt = tf.Variable(starting_step, dtype=tf.int64, trainable=False)
    self.ready_values = tf.Variable([-1.0], dtype=tf.float32, shape=tf.TensorShape(None),
                                    trainable=False)
    self.logger_thread = None
    self.logging_callback = None
    self.terminator = None
    self.last_log_time = None
    self.last_log_step = starting_step
    self.count_warnings = None

  def start(self, logging_callback: Optional[Callable[[], None]] = None) -> None:
    """Starts the logging thread; `logging_callback` runs on every wake-up, before the write
    (under the summary writer, at the current step), whether or not the step advanced."""
    assert self.logger_thread is None, 'ProgressLogger already started.'
    self.logging_callback = logging_callback
    self.terminator = threading.Event()
    self.logger_thread = threading.Thread(target=self._logging_loop, daemon=True,
                                          name='ProgressLogger')
    self.logger_thread.start()

  def watch_counts(self, read_counts: Callable[[], Mapping[str, int]], message: str) -> None:
    """Checks `read_counts()` on every wake-up (before the callback) and warns, rate-limited,
    with `message` and the totals when one rose (`CountWarnings`); replaces an earlier watch."""
    self.count_warnings = CountWarnings(read_counts, message)

  def counts_summary(self) -> str:
    """The watched counts that are not zero ('3 skipped optimizer steps'), '' if none."""
    return '' if self.count_warnings is None else self.count_warnings.summary()

  def shutdown(self) -> None:
    """Stops the thread after a last write."""
    if self.logger_thread is not None:
      self.terminator.set()
      self.logger_thread.join()
      self.logger_thread = None

  def _log(self) -> None:
    """Runs the callback; writes the ready values if the step advanced since the last write."""
    current_step = int(self.step_cnt.numpy())
    values = self.ready_values.numpy()
    advanced = (current_step != self.last_log_step and
                values.shape == (len(self.log_keys),))
    now = time.time()
    writer_scope = (contextlib.nullcontext() if self.summary_writer is None
                    else self.summary_writer.as_default())
    counts = {} if self.count_warnings is None else self.count_warnings.check()
    with writer_scope:
      tf.summary.experimental.set_step(current_step)
      if self.logging_callback:
        self.logging_callback()
      if not advanced:
        return
      for key, value in zip(self.log_keys, values):
        tf.summary.scalar(key, value)
      for name, count in counts.items():
        tf.summary.scalar('non_finite/' + name.replace(' ', '_'), count)
      if self.last_log_time is not None:
        tf.summary.scalar('speed/steps_per_sec',
                          (current_step - self.last_log_step) / (now - self.last_log_time))
    self.last_log_time = now
    self.last_log_step = current_step

  def _logging_loop(self) -> None:
    period = self.initial_period
    while True:
      stop = self.terminator.wait(period)
      try:
        self._log()
      except Exception:  # pylint: disable=broad-except
        # A broken summary pipeline must not go unnoticed for a whole training run.
        logging.exception('ProgressLogger failed; stopping the process.')
        logging.fatal('ProgressLogger failed.')
      if stop:
        return
      period = min(self.max_period, period * self.period_factor)

  @tf.autograph.experimental.do_not_convert
  def log_session(self) -> List[Tuple[str, Any]]:
    """A new list to collect the values of one step."""
    return []

  @tf.autograph.experimental.do_not_convert
  def log(self, session, name: str, value) -> None:
    """Adds `value` under `name` to `session`. Call at trace time."""
    session.append((name, value))

  @tf.autograph.experimental.do_not_convert
  def log_session_from_dict(self, values: dict) -> List[Tuple[str, Any]]:
    session = self.log_session()
    for name, value in values.items():
      self.log(session, name, value)
    return session

  @tf.autograph.experimental.do_not_convert
  def step_end(self, session, step_increment: int = 1) -> None:
    """Publishes the session's values (each as the float32 mean of its elements) and advances
    the step by `step_increment`. Every session must log the same names in the same order."""
    names = [name for name, _ in session]
    if not self.log_keys:
      self.log_keys = names
    elif names != self.log_keys:
      raise ValueError(f'ProgressLogger sessions must log the same names in the same order; '
                       f'first {self.log_keys}, now {names}.')
    values = [tf.reduce_mean(tf.cast(v, tf.float32)) for _, v in session]
    self.ready_values.assign(tf.stack(values) if values else tf.zeros([0]))
    self.step_cnt.assign_add(step_increment)
