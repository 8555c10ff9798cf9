"""The queue of completed unrolls between inference and training, and the policy lag it sees.

Acting and training overlap: while an unroll waits in the queue (`--unroll_queue_max_size`
unrolls at most) and while its steps are being acted, the learner keeps training, so the policy
that acted is some iterations older than the one that trains. The queue stamps every unroll
with the training iterations at which its first and last trained steps were acted and, when
training takes a batch, measures the lag (as Sample Factory reports its policy lag) for the
`policy_lag/...` summaries. For agents with replay, training takes the unrolls into the replay
buffer, and the lag ends there.
"""

from typing import Any

import tensorflow as tf

from seed_rl.common.learner_runtime import queues

# Stamps of one unroll: the iterations at which its first and its last trained step were acted.
_STAMP_SPECS = (tf.TensorSpec([], tf.int64, 'first_step_iteration'),
                tf.TensorSpec([], tf.int64, 'last_step_iteration'))


class UnrollQueue(object):
  """A FIFO queue of `Unroll`s that measures their policy lag; enqueue blocks when full.

  Attributes:
    specs: the nest of TensorSpecs of one unroll.
  """

  def __init__(self, capacity: int, unroll_specs: Any, iterations: tf.Variable):
    """`iterations` is the learner's count of training iterations: the version of the policy
    (`capacity=-1`: unbounded)."""
    self.specs = unroll_specs
    self._iterations = iterations
    self._queue = queues.StructuredFIFOQueue(capacity, (unroll_specs, _STAMP_SPECS))
    # Of the last batch taken: the mean and maximum lag of the unrolls' first steps (the
    # oldest acting) and the mean lag of their last steps; -1 before the first batch.
    self._last_lags = tf.Variable([-1., -1., -1.], trainable=False, name='last_lags')

  @tf.autograph.experimental.do_not_convert
  def _iteration(self) -> tf.Tensor:
    return tf.cast(self._iterations, tf.int64)

  @tf.autograph.experimental.do_not_convert
  def enqueue_many(self, unrolls, first_step_iterations: tf.Tensor):
    """Queues `[N, ...]` unrolls whose first trained steps were acted at
    `first_step_iterations` and whose last steps are acted now."""
    last_step_iterations = tf.fill(tf.shape(first_step_iterations), self._iteration())
    return self._queue.enqueue_many((unrolls, (first_step_iterations, last_step_iterations)))

  @tf.autograph.experimental.do_not_convert
  def dequeue_many(self, n):
    """`n` unrolls (`[n, ...]`); blocks until there are that many."""
    unrolls, (first_step_iterations, last_step_iterations) = self._queue.dequeue_many(n)
    oldest = tf.cast(self._iteration() - first_step_iterations, tf.float32)
    newest = tf.cast(self._iteration() - last_step_iterations, tf.float32)
    with tf.control_dependencies([self._last_lags.assign(
        tf.stack([tf.reduce_mean(oldest), tf.reduce_max(oldest), tf.reduce_mean(newest)]))]):
      return tf.nest.map_structure(tf.identity, unrolls)

  def size(self) -> tf.Tensor:
    return self._queue.size()

  def close(self, cancel_pending_enqueues: bool = False):
    return self._queue.close(cancel_pending_enqueues=cancel_pending_enqueues)

  def policy_lag(self) -> dict:
    """Lags of the last batch taken, in training iterations: `first_step_mean`,
    `first_step_max` (the steps acted earliest) and `last_step_mean`; empty before the
    first batch."""
    lags = self._last_lags.numpy()
    if lags[0] < 0:
      return {}
    return dict(zip(('first_step_mean', 'first_step_max', 'last_step_mean'), lags.tolist()))

  def write_summaries(self) -> None:
    """Writes `policy_lag/...` scalars of the last batch taken (at the default writer's
    step)."""
    for name, value in self.policy_lag().items():
      tf.summary.scalar(f'policy_lag/{name}', value)
