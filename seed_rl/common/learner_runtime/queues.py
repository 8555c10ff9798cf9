"""Queues of nests of tensors: how completed unrolls travel from inference to training."""

from typing import Optional

import numpy as np
import tensorflow as tf


class StructuredFIFOQueue(tf.queue.FIFOQueue):
  """A FIFO queue of nests of tensors; enqueue blocks when full (the learner's back-pressure).

  `capacity=-1` makes it unbounded.
  """

  def __init__(self, capacity: int, specs, shared_name: Optional[str] = None,
               name: str = 'structured_fifo_queue'):
    self._specs = specs
    self._flattened_specs = tf.nest.flatten(specs)
    dtypes = [spec.dtype for spec in self._flattened_specs]
    shapes = [spec.shape for spec in self._flattened_specs]
    if capacity == -1:
      capacity = np.iinfo(np.int32).max
    super().__init__(capacity, dtypes, shapes, shared_name=shared_name, name=name)

  @property
  def specs(self):
    """The nest of TensorSpecs of one element."""
    return self._specs

  @tf.autograph.experimental.do_not_convert
  def dequeue(self, name=None):
    return tf.nest.pack_sequence_as(self._specs, super().dequeue(name=name))

  @tf.autograph.experimental.do_not_convert
  def dequeue_many(self, n, name=None):
    return tf.nest.pack_sequence_as(self._specs, super().dequeue_many(n, name=name))

  @tf.autograph.experimental.do_not_convert
  def enqueue(self, vals, name=None):
    tf.nest.assert_same_structure(vals, self._specs)
    return super().enqueue(tf.nest.flatten(vals), name=name)

  @tf.autograph.experimental.do_not_convert
  def enqueue_many(self, vals, name=None):
    tf.nest.assert_same_structure(vals, self._specs)
    return super().enqueue_many(tf.nest.flatten(vals), name=name)
