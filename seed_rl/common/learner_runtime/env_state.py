"""Per-environment state kept on the learner, indexed by environment id.

`PerEnvState` holds one row of variables per environment (run ids, recurrent states, previous
actions, episode statistics); `UnrollStore` turns each environment's stream of steps into
(overlapping) unrolls. Both live in variables so that the inference tf.function updates them.
"""

import tensorflow as tf

from seed_rl.common.training import tensors


def assert_unique_ids(env_ids, message: str, debug_tensors=()):
  """Raises InvalidArgumentError(message, env_ids, ...) when `env_ids` holds a repeated id."""
  return tf.debugging.Assert(
      tf.equal(tf.size(tf.unique(env_ids)[0]), tf.size(env_ids)),
      [message, env_ids] + list(debug_tensors), summarize=64)


class UnrollStore(tf.Module):
  """Per-environment buffer that turns a stream of steps into overlapping unrolls.

  Each environment fills its own row; once a row holds `num_overlapping_steps + unroll_length
  + 1` steps it is emitted as one unroll and its last `num_overlapping_steps + 1` steps start
  the next one. Consecutive unrolls thus share the bootstrap step, plus `num_overlapping_steps`
  burn-in steps (R2D2).
  """

  def __init__(self, num_envs: int, unroll_length: int, timestep_specs,
               num_overlapping_steps: int = 0, name: str = 'UnrollStore'):
    super().__init__(name=name)
    with self.name_scope:
      self._full_length = num_overlapping_steps + unroll_length + 1
      self._num_overlapping_steps = num_overlapping_steps

      self._unroll_specs = tf.nest.map_structure(
          lambda s: tf.TensorSpec([self._full_length] + s.shape.as_list(), s.dtype, s.name),
          timestep_specs)
      self._state, self._structure = tensors.create_variables(timestep_specs,
                                                       [num_envs, self._full_length])
      # Per-environment position of the next write.
      self._index = tf.Variable(
          tf.fill([num_envs], tf.constant(num_overlapping_steps, tf.int32)),
          trainable=False, name='index')

  @property
  def unroll_specs(self):
    """Specs of one unroll: every leaf gets a leading dimension of the full unroll length."""
    return self._unroll_specs

  @tf.function
  @tf.Module.with_name_scope
  def append(self, env_ids, values):
    """Appends one step per environment; returns the unrolls this completed.

    Args:
      env_ids: `<int32>[k]` distinct environment ids.
      values: nest matching the timestep specs, each leaf with leading dimension k.

    Returns:
      `(completed_ids <int64>[m], unrolls)` where each leaf of `unrolls` is
      `[m, full_length, ...]`.
    """
    env_ids = tf.convert_to_tensor(env_ids, tf.int32)
    checks = [assert_unique_ids(env_ids, f'Duplicate environment ids in store {self.name}')]
    for value in tf.nest.flatten(values):
      checks.append(tf.debugging.assert_equal(
          tf.shape(env_ids)[0], tf.shape(value)[0],
          message=f'Leading dimensions of env_ids and values differ in store {self.name}'))
    with tf.control_dependencies(checks):
      positions = self._index.sparse_read(env_ids)
    write_indices = tf.stack([env_ids, positions], axis=1)
    for var, value in zip(self._state, tf.nest.flatten(values)):
      var.scatter_nd_update(write_indices, value)
    new_positions = positions + 1
    self._index.scatter_update(tf.IndexedSlices(new_positions, env_ids))

    completes = tf.equal(new_positions, self._full_length)

    def take_completed():
      completed_ids = tensors.select_rows(env_ids, completes)
      flat_unrolls = [var.sparse_read(completed_ids) for var in self._state]
      # Completed rows restart with their last `overlap + 1` steps in front.
      keep = self._num_overlapping_steps + 1
      for var, unroll in zip(self._state, flat_unrolls):
        var.scatter_update(tf.IndexedSlices(tf.roll(unroll, shift=keep, axis=1),
                                            completed_ids))
      self._index.scatter_update(tf.IndexedSlices(
          tf.fill(tf.shape(completed_ids), keep), completed_ids))
      return tf.cast(completed_ids, tf.int64), flat_unrolls

    def none_completed():
      return (tf.zeros([0], tf.int64),
              tensors.empty_rows(tf.nest.flatten(self._unroll_specs)))

    # Most steps complete no unroll: they skip reading, rolling and rewriting rows.
    completed_ids, flat_unrolls = tf.cond(tf.reduce_any(completes), take_completed,
                                          none_completed)
    return completed_ids, tf.nest.pack_sequence_as(self._structure.nest, flat_unrolls)

  @tf.function
  @tf.Module.with_name_scope
  def starts_next_unroll(self, env_ids):
    """Whether the next `append` of each env writes the first step of the env's next unroll.

    A learner records the recurrent state before that step as the next unroll's initial state.
    Without overlap it is the step that completes the current unroll; with overlap it comes
    `num_overlapping_steps` steps earlier. If the overlap is not shorter than the unroll, that
    step was appended in an earlier cycle, and the completing step is reported instead (the
    burn-in then starts from a later state, as in the original SEED RL).
    """
    unroll_length = self._full_length - self._num_overlapping_steps - 1
    if unroll_length > self._num_overlapping_steps:
      position = unroll_length
    else:
      position = self._full_length - 1
    return tf.equal(self._index.sparse_read(tf.convert_to_tensor(env_ids, tf.int32)), position)

  @tf.function
  @tf.Module.with_name_scope
  def reset(self, env_ids):
    """Starts the rows of `env_ids` afresh (zero burn-in); used when an actor restarts.

    Not for episode ends: episodes run across unroll boundaries and `done` marks them.
    """
    env_ids = tf.convert_to_tensor(env_ids, tf.int32)
    self._index.scatter_update(tf.IndexedSlices(
        tf.fill(tf.shape(env_ids), self._num_overlapping_steps), env_ids))
    for var in self._state:
      zeros = tf.zeros(tf.concat([tf.shape(env_ids), tf.shape(var)[1:]], 0), var.dtype)
      var.scatter_update(tf.IndexedSlices(zeros, env_ids))


class PerEnvState(tf.Module):
  """Per-environment state (a nest of `[num_envs, ...]` variables) indexed by env id."""

  def __init__(self, num_envs: int, specs, name: str = 'PerEnvState'):
    super().__init__(name=name)
    with self.name_scope:
      self._state, self._structure = tensors.create_variables(specs, [num_envs])

  @tf.autograph.experimental.do_not_convert
  @tf.Module.with_name_scope
  def reset(self, env_ids):
    """Zeroes the state of `env_ids`."""
    for var in self._state:
      zeros = tf.zeros(tf.concat([tf.shape(env_ids), tf.shape(var)[1:]], 0), var.dtype)
      var.scatter_update(tf.IndexedSlices(zeros, env_ids))

  @tf.autograph.experimental.do_not_convert
  @tf.Module.with_name_scope
  def add(self, env_ids, values):
    """Adds `values` to the state of `env_ids`; a leaf without the env dimension broadcasts."""
    def add_leaf(var, value):
      value = tf.convert_to_tensor(value, var.dtype)
      target_shape = tf.concat([tf.shape(env_ids), tf.shape(var)[1:]], 0)
      var.scatter_add(tf.IndexedSlices(tf.broadcast_to(value, target_shape), env_ids))
    tf.nest.assert_same_structure(self._structure.nest, values)
    for var, value in zip(self._state, tf.nest.flatten(values)):
      add_leaf(var, value)

  @tf.autograph.experimental.do_not_convert
  @tf.Module.with_name_scope
  def read(self, env_ids):
    """The state of `env_ids`."""
    return tf.nest.pack_sequence_as(self._structure.nest,
                                    [var.sparse_read(env_ids) for var in self._state])

  @tf.autograph.experimental.do_not_convert
  @tf.Module.with_name_scope
  def replace(self, env_ids, values, debug_op_name: str = '', debug_tensors=None):
    """Overwrites the state of `env_ids` (rank-1, without duplicates) with `values`."""
    tf.nest.assert_same_structure(self._structure.nest, values)
    if not self._state:
      return  # A state without leaves (a network without memory): nothing to check or write.
    env_ids = tf.convert_to_tensor(env_ids)
    where = f'{self.name} {debug_op_name}'.strip()
    tf.debugging.assert_rank(env_ids, 1, message=f'env_ids must be rank 1 in {where}')
    with tf.control_dependencies([assert_unique_ids(
        env_ids, f'Duplicate environment ids in {where}', debug_tensors or ())]):
      for var, value in zip(self._state, tf.nest.flatten(values)):
        var.scatter_update(tf.IndexedSlices(value, env_ids))
