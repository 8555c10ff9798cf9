"""Running observation normalization that works across replicas.

Statistics are gathered in two phases so that a multi-replica learner can
update them consistently: every replica first *accumulates* counts, sums and
sums of squares of its own data into replica-local variables
(`update(x, only_accumulate=True)`), then `finish_update()` all-reduces those
accumulators, folds them into the shared totals and zeroes them. With no
distribution strategy the same code runs on the single default replica.

A fold whose totals or statistics would not be finite is refused as a whole
(the accumulated data is dropped, the statistics stay) and counted
(`update_gate`, kind 'observation normalizer updates').
"""

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from seed_rl.common import networks
from seed_rl.common.training import update_gate


class Normalizer(tf.Module):
  """Normalizes vectors with running mean/std statistics.

  The variables are created lazily on the first input (sized by its last
  dimension) or by an explicit `build(size)`. Under a
  `tf.distribute.Strategy` create them inside `strategy.scope()`.

  Counts and sums are kept in float64 so that statistics stay accurate over
  billions of steps; `mean` and `std` are float32.
  """

  def __init__(self, eps: float = 0.001,
               clip_range: tuple[float, float] = (-5, 5)):
    """Creates an unbuilt normalizer.

    Args:
      eps: Added to the std before dividing, so constant features do not blow
        up.
      clip_range: (low, high) bounds applied to the normalized values.
    """
    super().__init__(name='normalizer')
    self.eps = eps
    self.clip_range = tuple(clip_range)
    self.initialized = False
    self.size = None
    self._refused = None

  def build(self, size: int) -> None:
    """Creates the variables for inputs whose last dimension is `size`."""
    if self.initialized:
      if size != self.size:
        raise ValueError(f'Normalizer was built for size {self.size}, got an '
                         f'input of size {size}')
      return
    self.size = int(size)

    def local_acc(name, shape):
      # Replica-local: each replica adds its own data without any
      # communication; SUM makes a cross-replica read the total over replicas.
      return tf.Variable(
          tf.zeros(shape, tf.float64), name=name, trainable=False,
          synchronization=tf.VariableSynchronization.ON_READ,
          aggregation=tf.VariableAggregation.SUM)

    def total(name, initial_value):
      # Mirrored: every replica computes the same update, so keeping the
      # first replica's write is exact.
      return tf.Variable(
          initial_value, name=name, trainable=False,
          synchronization=tf.VariableSynchronization.ON_WRITE,
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

    with self.name_scope:
      self.steps_acc = local_acc('steps_acc', [])
      self.sum_acc = local_acc('sum_acc', [self.size])
      self.sumsq_acc = local_acc('sumsq_acc', [self.size])
      self.steps = total('steps', tf.zeros([], tf.float64))
      self.sum = total('sum', tf.zeros([self.size], tf.float64))
      self.sumsq = total('sumsq', tf.zeros([self.size], tf.float64))
      self.mean = total('mean', tf.zeros([self.size], tf.float32))
      # 1 rather than 0 so an unused normalizer is (almost) the identity.
      self.std = total('std', tf.ones([self.size], tf.float32))
    self._refused = update_gate.RefusedUpdates('observation normalizer updates')
    self.initialized = True

  def _maybe_build(self, x: tf.Tensor) -> None:
    size = x.shape[-1] if x.shape.rank else None
    if size is None:
      raise ValueError('Normalizer needs inputs with a known last dimension, '
                       f'got shape {x.shape}')
    self.build(size)

  def update(self, x: tf.Tensor, only_accumulate: bool = False) -> None:
    """Adds the rows of `x` (all but the last dimension flattened).

    Args:
      x: Tensor of shape `[..., size]`.
      only_accumulate: If True only this replica's accumulators change; call
        `finish_update()` later (in a multi-replica setting, once every
        replica has accumulated). If False, finishes the update now.
    """
    x = tf.convert_to_tensor(x)
    self._maybe_build(x)
    x = tf.reshape(tf.cast(x, tf.float64), [-1, self.size])
    self.steps_acc.assign_add(tf.cast(tf.shape(x)[0], tf.float64))
    self.sum_acc.assign_add(tf.reduce_sum(x, axis=0))
    self.sumsq_acc.assign_add(tf.reduce_sum(tf.square(x), axis=0))
    if not only_accumulate:
      self.finish_update()

  def finish_update(self) -> None:
    """Folds the accumulators of all replicas into the totals, zeroes them.

    Callable in a replica context (inside `strategy.run`, or with no
    strategy) and in a strategy's cross-replica context.
    """
    if not self.initialized:
      return  # Nothing was ever accumulated.
    accumulators = [self.steps_acc, self.sum_acc, self.sumsq_acc]
    if tf.distribute.in_cross_replica_context():
      # Reading a SUM-aggregated ON_READ variable here reduces it over the
      # replicas.
      steps, sums, sumsqs = [acc.read_value() for acc in accumulators]
    else:
      steps, sums, sumsqs = tf.distribute.get_replica_context().all_reduce(
          tf.distribute.ReduceOp.SUM,
          [acc.read_value() for acc in accumulators])
    # Read before zeroing so the all-reduce cannot see the zeros.
    with tf.control_dependencies([steps, sums, sumsqs]):
      for acc in accumulators:
        acc.assign(tf.zeros(acc.shape, acc.dtype))
    total_steps = self.steps.read_value() + steps
    total_sum = self.sum.read_value() + sums
    total_sumsq = self.sumsq.read_value() + sumsqs
    safe_steps = tf.maximum(total_steps, 1.)
    mean = total_sum / safe_steps
    var = tf.maximum(total_sumsq / safe_steps - tf.square(mean), 0.)
    has_data = total_steps > 0
    update_gate.assign_if_finite(self._refused, [
        (self.steps, total_steps), (self.sum, total_sum),
        (self.sumsq, total_sumsq),
        # Keep the previous statistics until some data has been seen.
        (self.mean, tf.where(has_data, tf.cast(mean, tf.float32), self.mean)),
        (self.std,
         tf.where(has_data, tf.cast(tf.sqrt(var), tf.float32), self.std))])

  def __call__(self, x: tf.Tensor) -> tf.Tensor:
    """Returns `clip((x - mean) / (std + eps))`, same shape as `x`.

    The result has `x`'s dtype if it is floating point, float32 otherwise.
    """
    x = tf.convert_to_tensor(x)
    self._maybe_build(x)
    out_dtype = x.dtype if x.dtype.is_floating else tf.float32
    normalized = (tf.cast(x, tf.float32) - self.mean) / (self.std + self.eps)
    normalized = tf.clip_by_value(normalized, *self.clip_range)
    return tf.cast(normalized, out_dtype)

  def get_logs(self) -> dict[str, tf.Tensor]:
    """Per-dimension statistics, keyed `mean/<i>` and `std/<i>`."""
    logs = {}
    if not self.initialized:
      return logs
    for i in range(self.size):
      logs[f'mean/{i}'] = self.mean[i]
      logs[f'std/{i}'] = self.std[i]
    return logs


class NormalizeObservationsWrapper(tf.Module):
  """Wraps an agent so that it sees normalized observations.

  The wrapped agent follows the learners' calling convention
  `agent(prev_actions, env_outputs, core_state, unroll=False,
  is_training=False)`, where `env_outputs` is the namedtuple
  `EnvOutput(reward, done, observation, abandoned, episode_step)`. Only
  `env_outputs.observation` is changed: its floating-point leaves are
  flattened (behind the batch dimensions: `[T, B]` when `unroll=True`,
  `[B]` otherwise), concatenated into one vector per step, normalized by
  `normalizer` and split back into the original structure, shapes and
  dtypes. Non-float leaves pass through untouched; everything else is passed
  through to the wrapped agent as given.

  Calls with `is_training=True` accumulate statistics (on the calling
  replica); learners then call `end_of_training_step_callback()` once per
  training step to combine them across replicas, so the statistics only
  change between training steps.

  `initial_state` and `get_action` are forwarded, as are `get_Q`, `get_V`
  and `get_action_params` when the wrapped agent has them.
  """

  _OPTIONAL_METHODS = ('get_Q', 'get_V', 'get_action_params')

  def __init__(self, policy: Any, normalizer: Normalizer):
    super().__init__(name='NormalizeObservationsWrapper')
    self.policy = policy
    self.normalizer = normalizer
    for method_name in self._OPTIONAL_METHODS:
      if hasattr(policy, method_name):
        setattr(self, method_name, self._forward_normalized(method_name))

  # Keras 3 layers are not tf.Modules, so tf.Module's attribute walk would
  # miss a Keras policy's variables: ask the policy itself.
  @property
  def trainable_variables(self):
    return tuple(self.policy.trainable_variables)

  @property
  def variables(self):
    return tuple(self.policy.variables) + tuple(self.normalizer.variables)

  def _normalize_env_outputs(self, env_outputs: Any, unroll: bool,
                             is_training: bool) -> Any:
    observation = env_outputs.observation
    leaves = [tf.convert_to_tensor(x) for x in tf.nest.flatten(observation)]
    float_ids = [i for i, leaf in enumerate(leaves) if leaf.dtype.is_floating]
    if not float_ids:
      return env_outputs
    batch_ndims = 2 if unroll else 1
    batch_shape = tf.shape(leaves[float_ids[0]])[:batch_ndims]
    flat_parts, sizes = [], []
    for i in float_ids:
      inner_shape = leaves[i].shape[batch_ndims:]
      if not inner_shape.is_fully_defined():
        raise ValueError(
            f'Observation leaf {i} needs a static shape after the '
            f'{batch_ndims} batch dimension(s), got {leaves[i].shape}')
      size = inner_shape.num_elements()
      sizes.append(size)
      flat_parts.append(tf.reshape(
          tf.cast(leaves[i], tf.float32),
          tf.concat([batch_shape, [size]], axis=0)))
    flat = tf.concat(flat_parts, axis=-1)
    if is_training:
      self.normalizer.update(flat, only_accumulate=True)
    normalized = self.normalizer(flat)
    parts = tf.split(normalized, sizes, axis=-1)
    for i, part in zip(float_ids, parts, strict=True):
      leaves[i] = tf.cast(tf.reshape(part, tf.shape(leaves[i])),
                          leaves[i].dtype)
    return env_outputs._replace(
        observation=tf.nest.pack_sequence_as(observation, leaves))

  def __call__(self, prev_actions, env_outputs, core_state, unroll=False,
               is_training=False, **kwargs):
    env_outputs = self._normalize_env_outputs(env_outputs, unroll, is_training)
    return self.policy(prev_actions, env_outputs, core_state, unroll=unroll,
                       is_training=is_training, **kwargs)

  def get_action(self, prev_actions, env_outputs, core_state, unroll=False,
                 is_training=False, **kwargs):
    env_outputs = self._normalize_env_outputs(env_outputs, unroll, is_training)
    return self.policy.get_action(prev_actions, env_outputs, core_state,
                                  unroll=unroll, is_training=is_training,
                                  **kwargs)

  def initial_state(self, *args, **kwargs):
    return self.policy.initial_state(*args, **kwargs)

  def end_of_training_step_callback(self) -> None:
    """Combines the accumulated statistics (and chains the policy's hook)."""
    self.normalizer.finish_update()
    callback = getattr(self.policy, 'end_of_training_step_callback', None)
    if callback is not None:
      callback()

  def _forward_normalized(self, method_name: str) -> Callable[..., Any]:
    """Forwards `method_name`, normalizing its `env_outputs` argument.

    `env_outputs` is the second positional argument (as in `__call__`);
    `unroll` and `is_training` are read from the keyword arguments, if given,
    and passed on unchanged. Without `unroll` the inputs are an unroll when
    `env_outputs.done` is `[T, B]` (`networks.is_time_major`), as the methods
    forwarded take them.
    """
    method = getattr(self.policy, method_name)

    def forwarded(prev_actions, env_outputs, *args, **kwargs):
      env_outputs = self._normalize_env_outputs(
          env_outputs, networks.is_time_major(env_outputs, kwargs.get('unroll')),
          kwargs.get('is_training', False))
      return method(prev_actions, env_outputs, *args, **kwargs)

    forwarded.__name__ = method_name
    forwarded.__doc__ = f'`policy.{method_name}` on normalized observations.'
    return forwarded
