"""Prioritized experience replay of unrolls (Schaul et al. 2016), in TensorFlow variables."""

import os

from absl import logging
import numpy as np
import tensorflow as tf

from seed_rl.common.training import tensors
from seed_rl.common.training import update_gate


def _as_tensor_specs(specs):
  """`specs` with every leaf a `tf.TensorSpec`; a tensor or array leaf stands for its shape
  and dtype, so an example item (without its batch dimension) can describe what is stored."""

  def as_spec(leaf):
    if isinstance(leaf, tf.TensorSpec):
      return leaf
    if hasattr(leaf, 'shape') and hasattr(leaf, 'dtype'):
      return tf.TensorSpec(leaf.shape, tf.as_dtype(leaf.dtype))
    raise ValueError(  # noqa: TRY004 (argument errors of the replays are ValueErrors)
        'Replay specs must be tf.TensorSpecs, or tensors or arrays whose shape and dtype '
        f'describe one stored item; got {leaf!r}.')

  return tf.nest.map_structure(as_spec, specs)


class PrioritizedReplay(tf.Module):
  """Ring buffer of unrolls sampled in proportion to priority^alpha (Schaul et al. 2016).

  `specs` describe one item: a nest of `tf.TensorSpec`s, or of tensors whose shapes and dtypes
  are used. Not thread-safe: the learner inserts and samples from one thread.

  Nothing non-finite enters the buffer: `insert` leaves out the items with a non-finite value or
  priority, and `update_priorities` keeps the old priority where the new one is not finite;
  both are counted (`update_gate`, kinds 'replay rows' and 'replay priorities').
  """

  def __init__(self, size: int, specs, importance_sampling_exponent: float,
               name: str = 'PrioritizedReplay'):
    super().__init__(name=name)
    if size <= 0:
      raise ValueError(f'Replay buffer size must be positive, got {size}.')
    specs = _as_tensor_specs(specs)
    self._size = size
    self.importance_sampling_exponent = importance_sampling_exponent
    with self.name_scope:
      self._priorities = tf.Variable(tf.zeros([size]), trainable=False, name='priorities')
      self._buffer, self._structure = tensors.create_variables(specs, [size])
      self.num_inserted = tf.Variable(0, dtype=tf.int64, trainable=False, name='num_inserted')
    self._refused_rows = update_gate.RefusedUpdates('replay rows')
    self._refused_priorities = update_gate.RefusedUpdates('replay priorities')

  @tf.function
  @tf.Module.with_name_scope
  def insert(self, values, priorities):
    """Inserts a batch (FIFO, overwriting the oldest) and returns the `<int64>` indices of the
    items inserted: all but those with a non-finite value or priority, which are counted."""
    priorities = tf.convert_to_tensor(priorities, tf.float32)
    tf.nest.assert_same_structure(self._structure.nest, values)
    flat_values = [tf.convert_to_tensor(value) for value in tf.nest.flatten(values)]
    finite = update_gate.finite_rows(flat_values + [priorities])
    self._refused_rows.add(tf.reduce_sum(tf.cast(tf.logical_not(finite), tf.int64)))
    priorities = tf.boolean_mask(priorities, finite)
    num_values = tf.cast(tf.shape(priorities)[0], tf.int64)
    indices = (self.num_inserted + tf.range(num_values)) % self._size
    for var, value in zip(self._buffer, flat_values):
      var.scatter_update(tf.IndexedSlices(tf.boolean_mask(value, finite), indices))
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
    """Sets the priorities of `indices` (a repeated index keeps one of its values); where a new
    priority is not finite the old one stays, and the refusal is counted."""
    priorities = tf.convert_to_tensor(priorities, tf.float32)
    finite = tf.math.is_finite(priorities)
    self._refused_priorities.add(tf.reduce_sum(tf.cast(tf.logical_not(finite), tf.int64)))
    self._priorities.scatter_update(tf.IndexedSlices(
        tf.where(finite, priorities, tf.gather(self._priorities, indices)), indices))


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


def numpy_reward_fn(compute_reward, dtype=tf.float32):
  """Wraps a numpy `compute_reward(achieved, desired)` into the TF callable replay expects.

  `HindsightExperienceReplay` calls its `compute_reward_fn` inside a `tf.function` with
  tensors, so a numpy reward (a GoalEnv's `compute_reward(achieved, desired, info)`) has to
  go through `tf.numpy_function`, e.g.
  `numpy_reward_fn(lambda a, d: env.compute_reward(a, d, {}))`. The result is cast to `dtype`
  and gets the static shape `achieved.shape[:-1]`.
  """

  def reward_fn(achieved_goal, desired_goal):
    rewards = tf.numpy_function(
        lambda a, d: np.asarray(compute_reward(a, d), dtype.as_numpy_dtype),
        [achieved_goal, desired_goal], dtype, stateful=False)
    rewards.set_shape(achieved_goal.shape[:-1])
    return rewards

  return reward_fn


class HindsightExperienceReplay(PrioritizedReplay):
  """Prioritized replay of windows of unrolls with Hindsight Experience Replay.

  HER (Andrychowicz et al. 2017) turns failed goal-conditioned episodes into useful learning
  signal: a transition is replayed as if the goal had been a goal the agent actually achieved
  later, so sparse rewards become frequent. This buffer implements the `future` strategy of
  the paper on fixed windows, as the original SEED RL's does for SAC (`--her_window_length`).

  Each stored item is a namedtuple with an `env_outputs` field, such as
  `Unroll(agent_state, prev_actions, env_outputs, agent_outputs)`. Its leaves other than those
  of an `agent_state` field (optional; stored and returned once per item) are windows of
  `H + 1` steps (`[H + 1, ...]` per item), and its `env_outputs` is an `EnvOutput` with a
  GoalEnv observation, a dict with the keys `achieved_goal` and `desired_goal` (goals
  `[H + 1, ..., goal_dim]`) and usually `observation`. `specs` are `tf.TensorSpec`s or
  tensors, as for `PrioritizedReplay`.

  `sample` draws items like `PrioritizedReplay.sample` (same indices and importance weights),
  then for every item:
    1. For each step t it draws a future step f uniformly in `[min(t + 1, H), H]` and, with
       probability `substitution_probability` and only where `done[t]` is False, replaces
       `desired_goal[t]` by `achieved_goal[f]`. Hindsight goals come from later steps of the
       same window, not necessarily of the same episode (as in the original).
    2. The reward at step t >= 1 belongs to the transition t-1 -> t, so it is recomputed from
       `achieved_goal[t]` and `desired_goal[t-1]`. The new reward is
       `reward[t] + compute_reward_fn(achieved[t], new_desired[t-1])
                   - compute_reward_fn(achieved[t], desired[t-1])`
       where `done[t]` is False (that reward is the last one of the previous episode, which
       cannot be recomputed from `achieved_goal[t]`), and the stored `reward[t]` elsewhere and
       at t = 0. Adding the difference keeps any reward shaping of the stored reward that
       does not depend on the goal; without substitution the stored rewards come back
       unchanged.
    3. It keeps a uniformly random contiguous sub-window of `unroll_length + 1` steps (one
       start per item, shared by all its leaves); an `agent_state` is returned as stored.

  `compute_reward_fn(achieved_goal, desired_goal)` is a TensorFlow callable: it gets goal
  tensors `[n, H, ..., goal_dim]` of the stored dtype inside a `tf.function` and returns
  rewards `[n, H, ...]`.
  Wrap a numpy reward such as a GoalEnv's `compute_reward(achieved, desired, info)` with
  `numpy_reward_fn(lambda a, d: env.compute_reward(a, d, {}))`.

  Not thread-safe: the learner inserts and samples from one thread.
  """

  def __init__(self, size: int, specs, importance_sampling_exponent: float,
               compute_reward_fn, unroll_length: int, substitution_probability: float,
               name: str = 'HindsightExperienceReplay'):
    if not callable(compute_reward_fn):
      raise ValueError(  # noqa: TRY004 (argument errors of this class are ValueErrors)
          f'compute_reward_fn must be callable, got {compute_reward_fn!r}.')
    if not 0.0 <= substitution_probability <= 1.0:
      raise ValueError('substitution_probability must be in [0, 1], got '
                       f'{substitution_probability}.')
    specs = _as_tensor_specs(specs)
    if 'env_outputs' not in getattr(specs, '_fields', ()):
      raise ValueError('HindsightExperienceReplay stores namedtuples with an `env_outputs` '
                       'field, such as Unroll(agent_state, prev_actions, env_outputs, '
                       f'agent_outputs); got specs {specs!r}.')
    observation = getattr(specs.env_outputs, 'observation', None)
    if not isinstance(observation, dict) or not {'achieved_goal', 'desired_goal'} <= set(
        observation):
      raise ValueError('HindsightExperienceReplay needs a GoalEnv observation: a dict with the '
                       f'keys `achieved_goal` and `desired_goal`, got {observation!r}.')
    achieved, desired = observation['achieved_goal'], observation['desired_goal']
    if achieved.shape != desired.shape or (achieved.shape.rank or 0) < 2:
      raise ValueError('achieved_goal and desired_goal must have the same shape [H + 1, ..., '
                       f'goal_dim], got {achieved.shape} and {desired.shape}.')
    windowed = tf.nest.flatten(_without_agent_state(specs))
    leading = {spec.shape[0] if spec.shape.rank else None for spec in windowed}
    if len(leading) != 1 or None in leading:
      raise ValueError('Every leaf of the stored unrolls except agent_state must have the '
                       'same static leading window dimension H + 1; got shapes '
                       f'{[s.shape.as_list() for s in windowed]}.')
    window_length = leading.pop()
    if window_length < 2:
      raise ValueError(f'The stored windows need at least 2 steps (H >= 1), got {window_length}.')
    horizon = window_length - 1
    if not 1 <= unroll_length <= horizon:
      raise ValueError(f'unroll_length must be in [1, H={horizon}] (the stored window holds '
                       f'H + 1 = {window_length} steps), got {unroll_length}.')
    super().__init__(size, specs, importance_sampling_exponent, name=name)
    self._compute_reward_fn = compute_reward_fn
    self._horizon = horizon
    self._unroll_length = unroll_length
    self._substitution_probability = float(substitution_probability)

  @tf.Module.with_name_scope
  def sample(self, num_samples: int, priority_exp: float):
    """Samples like `PrioritizedReplay.sample`, then relabels goals and sub-samples windows.

    Returns:
      `(indices <int64>[n], importance weights <float32>[n], unrolls)` with the leaves of
      `unrolls` other than `agent_state` of shape `[n, unroll_length + 1, ...]`.
    """
    indices, weights, unrolls = super().sample(num_samples, priority_exp)
    return indices, weights, self.apply_hindsight(unrolls)

  @tf.function
  @tf.Module.with_name_scope
  def apply_hindsight(self, unrolls):
    """Substitutes goals, recomputes rewards and cuts sub-windows of a batch of windows."""
    horizon, length = self._horizon, self._unroll_length
    env_outputs = unrolls.env_outputs
    achieved = env_outputs.observation['achieved_goal']
    desired = env_outputs.observation['desired_goal']
    done = tf.cast(env_outputs.done, tf.bool)
    num = tf.shape(done)[0]

    # Future step of every step t, uniform in [min(t + 1, H), H].
    low = tf.minimum(tf.range(horizon + 1) + 1, horizon)
    count = horizon + 1 - low
    offsets = tf.cast(tf.random.uniform([num, horizon + 1]) * tf.cast(count, tf.float32),
                      tf.int32)
    future = low + tf.minimum(offsets, count - 1)
    future_achieved = tf.gather(achieved, future, batch_dims=1)
    substitute = tf.logical_and(
        tf.random.uniform([num, horizon + 1]) < self._substitution_probability,
        tf.logical_not(done))
    mask = tf.reshape(substitute, tf.concat(
        [tf.shape(substitute), tf.ones([desired.shape.rank - 2], tf.int32)], 0))
    new_desired = tf.where(mask, tf.cast(future_achieved, desired.dtype), desired)

    # Rewards of the transitions t-1 -> t for t >= 1, with the new and the stored goals (one
    # call, so a numpy reward crosses into Python once).
    both = self._compute_reward_fn(
        tf.concat([achieved[:, 1:], achieved[:, 1:]], 0),
        tf.concat([new_desired[:, :-1], desired[:, :-1]], 0))
    reward = env_outputs.reward
    both = tf.cast(both, reward.dtype)
    new_rewards, old_rewards = both[:num], both[num:]
    delta = tf.where(done[:, 1:], tf.zeros_like(new_rewards), new_rewards - old_rewards)
    reward = tf.concat([reward[:, :1], reward[:, 1:] + delta], 1)

    observation = dict(env_outputs.observation)
    observation['desired_goal'] = new_desired
    env_outputs = env_outputs._replace(
        reward=reward, observation=type(env_outputs.observation)(observation))
    unrolls = unrolls._replace(env_outputs=env_outputs)

    # One random contiguous sub-window of `length + 1` steps per item.
    start = tf.random.uniform([num], maxval=horizon - length + 1, dtype=tf.int32)
    steps = start[:, tf.newaxis] + tf.range(length + 1)[tf.newaxis]
    windows = tf.nest.map_structure(lambda x: tf.gather(x, steps, batch_dims=1),
                                    _without_agent_state(unrolls))
    if 'agent_state' in unrolls._fields:
      windows = windows._replace(agent_state=unrolls.agent_state)
    return windows


def _without_agent_state(unrolls):
  """`unrolls` with an `agent_state` field emptied: it is stored once per item, not per step."""
  if 'agent_state' in unrolls._fields:
    return unrolls._replace(agent_state=())
  return unrolls
