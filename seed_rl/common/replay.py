"""Prioritized experience replay of unrolls (Schaul et al. 2016), in TensorFlow variables."""

import os

from absl import logging
import tensorflow as tf

from seed_rl.common import env_state


class PrioritizedReplay(tf.Module):
  """Ring buffer of unrolls sampled in proportion to priority^alpha (Schaul et al. 2016).

  Not thread-safe: the learner inserts and samples from one thread.
  """

  def __init__(self, size: int, specs, importance_sampling_exponent: float,
               name: str = 'PrioritizedReplay'):
    super().__init__(name=name)
    if size <= 0:
      raise ValueError(f'Replay buffer size must be positive, got {size}.')
    self._size = size
    self.importance_sampling_exponent = importance_sampling_exponent
    with self.name_scope:
      self._priorities = tf.Variable(tf.zeros([size]), trainable=False, name='priorities')
      self._buffer, self._structure = env_state.create_variables(specs, [size])
      self.num_inserted = tf.Variable(0, dtype=tf.int64, trainable=False, name='num_inserted')

  @tf.function
  @tf.Module.with_name_scope
  def insert(self, values, priorities):
    """Inserts a batch (FIFO, overwriting the oldest) and returns its `<int64>` indices."""
    priorities = tf.convert_to_tensor(priorities, tf.float32)
    num_values = tf.cast(tf.shape(priorities)[0], tf.int64)
    indices = (self.num_inserted + tf.range(num_values)) % self._size
    tf.nest.assert_same_structure(self._structure.nest, values)
    for var, value in zip(self._buffer, tf.nest.flatten(values)):
      var.scatter_update(tf.IndexedSlices(value, indices))
    self._priorities.scatter_update(tf.IndexedSlices(priorities, indices))
    self.num_inserted.assign_add(num_values)
    return indices

  @tf.function
  @tf.Module.with_name_scope
  def sample(self, num_samples: int, priority_exp: float):
    """Samples with replacement.

    Args:
      num_samples: number of items.
      priority_exp: alpha; 0 samples uniformly (all importance weights 1).

    Returns:
      `(indices <int64>[n], importance weights <float32>[n], values)`; the weights are
      `((1/N) / p_i)^beta` normalised by their maximum in the sample.
    """
    check = tf.debugging.assert_positive(
        self.num_inserted,
        message=f'Cannot sample from the empty replay buffer {self.name}: insert items first.')
    with tf.control_dependencies([check]):
      limit = tf.minimum(tf.cast(self._size, tf.int64), self.num_inserted)
    if priority_exp == 0:
      indices = tf.random.uniform([num_samples], maxval=limit, dtype=tf.int64)
      weights = tf.ones([num_samples])
    else:
      scaled = tf.pow(self._priorities[:limit], priority_exp)
      total = tf.reduce_sum(scaled)
      check = tf.debugging.assert_positive(
          total, message=f'All priorities in {self.name} are zero; cannot sample by priority.')
      with tf.control_dependencies([check]):
        probs = scaled / total
      indices = tf.random.categorical(tf.math.log(probs)[tf.newaxis], num_samples)[0]
      sampled_probs = tf.gather(probs, indices)
      weights = tf.pow((1.0 / tf.cast(limit, tf.float32)) / sampled_probs,
                       self.importance_sampling_exponent)
      weights /= tf.reduce_max(weights)
    values = tf.nest.pack_sequence_as(self._structure.nest,
                                      [var.sparse_read(indices) for var in self._buffer])
    return indices, weights, values

  @tf.function
  @tf.Module.with_name_scope
  def update_priorities(self, indices, priorities):
    """Sets the priorities of `indices` (a repeated index keeps one of its values)."""
    self._priorities.scatter_update(
        tf.IndexedSlices(tf.convert_to_tensor(priorities, tf.float32), indices))


def _available_memory_bytes() -> int:
  """Memory the system can give without swapping (MemAvailable), or free pages."""
  try:
    with open('/proc/meminfo') as f:
      for line in f:
        if line.startswith('MemAvailable:'):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')


def check_replay_memory(unroll_specs, replay_buffer_size: int) -> int:
  """Logs the replay's memory and refuses one that does not fit (before allocating it).

  Returns the bytes of one stored unroll.
  """
  bytes_per_unroll = sum(spec.shape.num_elements() * spec.dtype.size
                         for spec in tf.nest.flatten(unroll_specs))
  total = bytes_per_unroll * replay_buffer_size
  available = _available_memory_bytes()
  logging.info('Replay buffer: %d bytes per unroll, %.3f GB for replay_buffer_size=%d '
               '(%.1f GB available).', bytes_per_unroll, total / 1e9, replay_buffer_size,
               available / 1e9)
  if total > available:
    raise ValueError(
        f'The replay buffer needs {total / 1e9:.2f} GB ({replay_buffer_size} unrolls of '
        f'{bytes_per_unroll} bytes) but only {available / 1e9:.2f} GB of memory is available. '
        'Lower --replay_buffer_size (or --unroll_length / --burn_in).')
  return bytes_per_unroll
