"""Learner building blocks shared by every agent.

Data structures of the actor/learner contract (`EnvOutput`), device set-up for the learner
(`init_learner`, `init_learner_multi_host`), per-environment state kept on the learner
(`Aggregator`, `UnrollStore`), replay (`PrioritizedReplay`), queues, tensor helpers,
configuration checks and transfer, and the TPU transfer encoding.
"""

import collections
import contextlib
import signal
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from seed_rl.common import config_transfer
from seed_rl.common import structures

EnvOutput = structures.EnvOutput

# strategy: holds the variables; inference_devices: one inference function per device;
# training_strategy: computes gradients; encode/decode: transfer encoding to/from those devices.
Settings = collections.namedtuple(
    'Settings', 'strategy inference_devices training_strategy encode decode')

# hosts: list of (host_device, [inference_devices]) pairs, one per learner host.
MultiHostSettings = collections.namedtuple(
    'MultiHostSettings', 'strategy hosts training_strategy encode decode')

nullcontext = contextlib.nullcontext


# ------------------------------------------------------------------------------------------------
# Learner devices and strategies.


def _learner_devices() -> Tuple[str, List[str]]:
  """(device type, device names) the learner computes on when there is no TPU.

  All visible GPUs; without a GPU all logical CPU devices (normally one; a user who split the
  CPU into several logical devices gets a replica on each, which is also how the multi-device
  path is exercised without GPUs).
  """
  gpus = tf.config.list_logical_devices('GPU')
  if gpus:
    return 'GPU', [d.name for d in gpus]
  return 'CPU', [d.name for d in tf.config.list_logical_devices('CPU')]


def _init_tpu_multi_host(num_training_tpus: int) -> MultiHostSettings:
  """Training on the first cores of every TPU host, inference on the others."""
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver('')
  topology = tf.tpu.experimental.initialize_tpu_system(resolver)
  strategy = tf.distribute.TPUStrategy(resolver)
  tpu_devices = tf.config.list_logical_devices('TPU')
  num_hosts = topology.num_tasks
  if num_training_tpus % num_hosts != 0:
    raise ValueError(
        f'num_training_tpus (={num_training_tpus}) must be a multiple of the number of TPU '
        f'hosts (={num_hosts}).')
  per_host = num_training_tpus // num_hosts
  cores_per_host = topology.num_tpus_per_task
  if per_host >= cores_per_host:
    raise ValueError(
        f'num_training_tpus (={num_training_tpus}) leaves no TPU core for inference: '
        f'{cores_per_host} cores per host, {per_host} used for training.')
  hosts = []
  training_coordinates = []
  for task in range(num_hosts):
    host_device = f'/job:worker/task:{task}/device:CPU:0'
    task_devices = [d.name for d in tpu_devices if f'task:{task}/' in d.name]
    hosts.append((host_device, task_devices[per_host:]))
    for core in range(per_host):
      training_coordinates.append(topology.task_ordinal_to_coordinates[task][core])
  device_assignment = tf.tpu.experimental.DeviceAssignment(
      topology, core_assignment=np.array([training_coordinates], dtype=np.int32).reshape(
          [-1, 1, topology.mesh_rank]))
  training_strategy = tf.distribute.TPUStrategy(
      resolver, experimental_device_assignment=device_assignment)
  return MultiHostSettings(strategy, hosts, training_strategy, tpu_encode, tpu_decode)


def init_learner_multi_host(num_training_tpus: int = 1) -> MultiHostSettings:
  """Chooses the learner's devices and distribution strategies.

  TPU: TPUStrategy, the first `num_training_tpus / hosts` cores of each host train, the rest
  run inference. GPUs: a MirroredStrategy over all visible GPUs (the original used only GPU:0)
  and one inference device per GPU. CPU: OneDeviceStrategy on the CPU (MirroredStrategy when
  the CPU was split into several logical devices).
  Variables are placed on the host CPU by default (as in the original) unless created under
  the strategy's scope.
  """
  if tf.config.list_logical_devices('TPU'):
    return _init_tpu_multi_host(num_training_tpus)
  tf.device('/cpu').__enter__()  # Default placement for everything not under a strategy.
  device_type, devices = _learner_devices()
  if len(devices) > 1:
    strategy = tf.distribute.MirroredStrategy(devices)
  else:
    strategy = tf.distribute.OneDeviceStrategy(devices[0])
  logging.info('Learner uses %d %s device(s): %s', len(devices), device_type, devices)
  identity = lambda x, *args: x
  return MultiHostSettings(strategy, [('/cpu', devices)], strategy, identity, identity)


def init_learner(num_training_tpus: int = 1) -> Settings:
  """Single-host variant of `init_learner_multi_host`."""
  settings = init_learner_multi_host(num_training_tpus)
  if len(settings.hosts) != 1:
    raise ValueError(f'init_learner supports one learner host, found {len(settings.hosts)}; '
                     'use init_learner_multi_host.')
  return Settings(settings.strategy, settings.hosts[0][1], settings.training_strategy,
                  settings.encode, settings.decode)


# ------------------------------------------------------------------------------------------------
# Per-environment state on the learner.


def _assert_unique_ids(env_ids, message: str, debug_tensors=()):
  """Raises InvalidArgumentError(message, env_ids, ...) when `env_ids` holds a repeated id."""
  return tf.debugging.Assert(
      tf.equal(tf.size(tf.unique(env_ids)[0]), tf.size(env_ids)),
      [message, env_ids] + list(debug_tensors), summarize=64)


class _Structure(object):
  """Holds a nest without tf.Module's tracking, which would turn its tuples into wrappers
  (Keras 3 rejects those as call arguments)."""

  def __init__(self, nest):
    self.nest = nest


def _create_variables(specs, leading_dims):
  """(flat list of zero variables `[*leading_dims, *spec.shape]`, structure of `specs`)."""
  variables = [tf.Variable(tf.zeros(list(leading_dims) + spec.shape.as_list(), spec.dtype),
                           trainable=False, name=spec.name)
               for spec in tf.nest.flatten(specs)]
  return variables, _Structure(tf.nest.map_structure(lambda _: None, specs))


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
      self._state, self._structure = _create_variables(timestep_specs,
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
    checks = [_assert_unique_ids(env_ids, f'Duplicate environment ids in store {self.name}')]
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

    completed_ids = tf.boolean_mask(env_ids, new_positions == self._full_length)
    flat_unrolls = [var.sparse_read(completed_ids) for var in self._state]

    # Completed rows restart with their last `overlap + 1` steps in front.
    keep = self._num_overlapping_steps + 1
    for var, unroll in zip(self._state, flat_unrolls):
      var.scatter_update(tf.IndexedSlices(tf.roll(unroll, shift=keep, axis=1), completed_ids))
    self._index.scatter_update(tf.IndexedSlices(
        tf.fill(tf.shape(completed_ids), keep), completed_ids))
    unrolls = tf.nest.pack_sequence_as(self._structure.nest, flat_unrolls)
    return tf.cast(completed_ids, tf.int64), unrolls

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


class Aggregator(tf.Module):
  """Per-environment state (a nest of `[num_envs, ...]` variables) indexed by env id."""

  def __init__(self, num_envs: int, specs, name: str = 'Aggregator'):
    super().__init__(name=name)
    with self.name_scope:
      self._state, self._structure = _create_variables(specs, [num_envs])

  @tf.Module.with_name_scope
  def reset(self, env_ids):
    """Zeroes the state of `env_ids`."""
    for var in self._state:
      zeros = tf.zeros(tf.concat([tf.shape(env_ids), tf.shape(var)[1:]], 0), var.dtype)
      var.scatter_update(tf.IndexedSlices(zeros, env_ids))

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

  @tf.Module.with_name_scope
  def read(self, env_ids):
    """The state of `env_ids`."""
    return tf.nest.pack_sequence_as(self._structure.nest,
                                    [var.sparse_read(env_ids) for var in self._state])

  @tf.Module.with_name_scope
  def replace(self, env_ids, values, debug_op_name: str = '', debug_tensors=None):
    """Overwrites the state of `env_ids` (rank-1, without duplicates) with `values`."""
    env_ids = tf.convert_to_tensor(env_ids)
    where = f'{self.name} {debug_op_name}'.strip()
    tf.debugging.assert_rank(env_ids, 1, message=f'env_ids must be rank 1 in {where}')
    with tf.control_dependencies([_assert_unique_ids(
        env_ids, f'Duplicate environment ids in {where}', debug_tensors or ())]):
      tf.nest.assert_same_structure(self._structure.nest, values)
      for var, value in zip(self._state, tf.nest.flatten(values)):
        var.scatter_update(tf.IndexedSlices(value, env_ids))


# ------------------------------------------------------------------------------------------------
# Replay.


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
      self._buffer, self._structure = _create_variables(specs, [size])
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


# ------------------------------------------------------------------------------------------------
# Periodic logging of values produced inside tf.functions.


class ProgressLogger(object):
  """Writes the scalars of the latest training step to TensorBoard from a background thread.

  Training code registers values with `log(session, name, value)` (at trace time) and calls
  `step_end` at the end of each step (inside its tf.function); a thread wakes up with a period
  growing from `initial_period` to `max_period`, writes every value and `speed/steps_per_sec`
  at the current step. Steps are whatever `step_end` counts (learners count env frames).
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

  def reset(self, summary_writer=None, starting_step: int = 0) -> None:
    """Points the logger at a new writer and step count (e.g. after a restore)."""
    self.summary_writer = summary_writer
    self.step_cnt.assign(starting_step)
    self.ready_values.assign([-1.0])
    self.last_log_time = None
    self.last_log_step = starting_step

  def start(self, logging_callback: Optional[Callable[[], None]] = None) -> None:
    """Starts the logging thread; `logging_callback` runs before every write."""
    assert self.logger_thread is None, 'ProgressLogger already started.'
    self.logging_callback = logging_callback
    self.terminator = threading.Event()
    self.logger_thread = threading.Thread(target=self._logging_loop, daemon=True,
                                          name='ProgressLogger')
    self.logger_thread.start()

  def shutdown(self) -> None:
    """Stops the thread after a last write."""
    if self.logger_thread is not None:
      self.terminator.set()
      self.logger_thread.join()
      self.logger_thread = None

  def _log(self) -> None:
    """Writes the ready values if the step advanced since the last write."""
    current_step = int(self.step_cnt.numpy())
    values = self.ready_values.numpy()
    if current_step == self.last_log_step or values.shape != (len(self.log_keys),):
      return
    now = time.time()
    with self.summary_writer.as_default():
      tf.summary.experimental.set_step(current_step)
      if self.logging_callback:
        self.logging_callback()
      for key, value in zip(self.log_keys, values):
        tf.summary.scalar(key, value)
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
        if self.summary_writer is not None:
          self._log()
      except Exception:  # pylint: disable=broad-except
        # A broken summary pipeline must not go unnoticed for a whole training run.
        logging.exception('ProgressLogger failed; stopping the process.')
        logging.fatal('ProgressLogger failed.')
      if stop:
        return
      period = min(self.max_period, period * self.period_factor)

  def log_session(self) -> List[Tuple[str, Any]]:
    """A new list to collect the values of one step."""
    return []

  def log(self, session, name: str, value) -> None:
    """Adds `value` under `name` to `session`. Call at trace time."""
    session.append((name, value))

  def log_session_from_dict(self, values: dict) -> List[Tuple[str, Any]]:
    session = self.log_session()
    for name, value in values.items():
      self.log(session, name, value)
    return session

  def step_end(self, session, strategy=None, step_increment: int = 1) -> None:
    """Publishes the session's values and advances the step by `step_increment`.

    With a `strategy`, each value is the mean of the first local replica's result.
    Every session must log the same names in the same order.
    """
    names = [name for name, _ in session]
    if not self.log_keys:
      self.log_keys = names
    elif names != self.log_keys:
      raise ValueError(f'ProgressLogger sessions must log the same names in the same order; '
                       f'first {self.log_keys}, now {names}.')

    def scalar(value):
      if strategy is not None:
        value = strategy.experimental_local_results(value)[0]
      return tf.reduce_mean(tf.cast(value, tf.float32))

    values = [scalar(v) for _, v in session]
    self.ready_values.assign(tf.stack(values) if values else tf.zeros([0]))
    self.step_cnt.assign_add(step_increment)


@contextlib.contextmanager
def stop_requested_on_signals(signals=(signal.SIGTERM, signal.SIGINT)):
  """Yields an Event that SIGTERM/SIGINT set instead of killing the process.

  Learners poll it to checkpoint and stop cleanly (preemption, Ctrl-C, stop_local.sh). The
  previous handlers come back on exit. Outside the main thread (where Python cannot install
  handlers) the event is only set by the caller.
  """
  stop_requested = threading.Event()

  def request_stop(signum, unused_frame):
    logging.info('Signal %d received: checkpointing and stopping.', signum)
    stop_requested.set()

  previous_handlers = {}
  if threading.current_thread() is threading.main_thread():
    for signum in signals:
      previous_handlers[signum] = signal.signal(signum, request_stop)
  try:
    yield stop_requested
  finally:
    for signum, handler in previous_handlers.items():
      signal.signal(signum, handler)


# ------------------------------------------------------------------------------------------------
# Queues and tensor helpers.


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

  def dequeue(self, name=None):
    return tf.nest.pack_sequence_as(self._specs, super().dequeue(name=name))

  def dequeue_many(self, n, name=None):
    return tf.nest.pack_sequence_as(self._specs, super().dequeue_many(n, name=name))

  def enqueue(self, vals, name=None):
    tf.nest.assert_same_structure(vals, self._specs)
    return super().enqueue(tf.nest.flatten(vals), name=name)

  def enqueue_many(self, vals, name=None):
    tf.nest.assert_same_structure(vals, self._specs)
    return super().enqueue_many(tf.nest.flatten(vals), name=name)


def batch_apply(fn: Callable, inputs: Sequence):
  """Applies `fn` to `[T, B, ...]` inputs merged to `[T*B, ...]`; outputs are `[T, B, ...]`."""
  time_dim = tf.shape(tf.nest.flatten(inputs)[0])[0]
  merged = tf.nest.map_structure(
      lambda t: tf.reshape(t, tf.concat([[-1], tf.shape(t)[2:]], 0)), inputs)
  outputs = fn(*merged)
  return tf.nest.map_structure(
      lambda t: tf.reshape(t, tf.concat([[time_dim, -1], tf.shape(t)[1:]], 0)), outputs)


def make_time_major(x):
  """Swaps the first two dimensions of every tensor of rank >= 2 (batch-major <-> time-major)."""

  def transpose(t):
    t = tf.convert_to_tensor(t)
    if t.shape.rank is not None and t.shape.rank < 2:
      return t
    perm = tf.concat([[1, 0], tf.range(2, tf.rank(t))], axis=0)
    result = tf.transpose(t, perm)
    if t.shape.rank is not None:
      dims = t.shape.as_list()
      result.set_shape([dims[1], dims[0]] + dims[2:])
    return result

  return tf.nest.map_structure(transpose, x)


def split_structure(structure, prefix_length: int, axis: int = 0):
  """Splits every leaf into `[:prefix_length]` and `[prefix_length:]` along `axis`."""
  pairs = [tf.split(t, [prefix_length, -1], axis=axis) for t in tf.nest.flatten(structure)]
  prefix = tf.nest.pack_sequence_as(structure, [pair[0] for pair in pairs])
  suffix = tf.nest.pack_sequence_as(structure, [pair[1] for pair in pairs])
  return prefix, suffix


def tensor_spec_from_gym_space(space, name: Optional[str] = None) -> tf.TensorSpec:
  """TensorSpec of the values of a gym(nasium) space.

  Spaces with a shape and dtype (Box, Discrete, MultiDiscrete, MultiBinary) map directly; a
  Tuple of 1-D spaces maps to one float32 vector of their summed size.
  """
  subspaces = getattr(space, 'spaces', None)
  if isinstance(subspaces, tuple):
    if not all(len(s.shape) == 1 for s in subspaces):
      raise ValueError(f'Only Tuple spaces of 1-D spaces are supported, got {space}.')
    size = sum(s.shape[0] for s in subspaces)
    return tf.TensorSpec([size], tf.float32, name)
  if getattr(space, 'shape', None) is None or getattr(space, 'dtype', None) is None:
    raise ValueError(f'Unsupported space {space!r}: it has no shape and dtype.')
  return tf.TensorSpec(space.shape, tf.as_dtype(space.dtype), name)


# ------------------------------------------------------------------------------------------------
# Configuration.


def validate_learner_config(config, num_hosts: int = 1) -> None:
  """Checks the learner's batch sizes; resolves `inference_batch_size=-1` in place.

  The server only runs full inference batches, so a batch must be a whole number of actor
  calls and there must be enough environments to fill one per host.
  """
  if config.num_envs <= 0:
    raise ValueError(f'num_envs must be positive, got {config.num_envs}.')
  if config.env_batch_size <= 0:
    raise ValueError(f'env_batch_size must be positive, got {config.env_batch_size}.')
  if config.inference_batch_size == -1:
    config.inference_batch_size = max(config.env_batch_size,
                                      config.num_envs // (2 * num_hosts))
  if config.inference_batch_size <= 0:
    raise ValueError(
        f'inference_batch_size must be positive or -1, got {config.inference_batch_size}.')
  if config.inference_batch_size % config.env_batch_size != 0:
    raise ValueError(
        'Learner-side batch size (=%d) must be exact multiple of the actor-side batch size '
        '(=%d).' % (config.inference_batch_size, config.env_batch_size))
  if config.num_envs < config.inference_batch_size * num_hosts:
    raise ValueError(
        'Inference batch size is bigger than the number of environments: '
        f'inference_batch_size={config.inference_batch_size} x {num_hosts} host(s) > '
        f'num_envs={config.num_envs}; the server runs full batches only, so it would wait '
        'forever.')


PER_PROCESS_FLAGS = config_transfer.PER_PROCESS_FLAGS
update_config = config_transfer.update_config


def config_from_flags() -> dict:
  """All flag values as a dict."""
  return {name: flags.FLAGS[name].value for name in flags.FLAGS}


def serialize_config(config) -> tf.Tensor:
  """Scalar string tensor of the experiment configuration, for a bound `get_config` function.

  FlagValues: the experiment flags whose value differs from the default; a dict or a
  dataclass: all its fields (see `config_transfer.serialize_config_json`).
  """
  return tf.constant(config_transfer.serialize_config_json(config))


# ------------------------------------------------------------------------------------------------
# Actor restarts seen inside one inference batch.


def get_non_dying_envs(envs_needing_reset, reset_mask, env_ids):
  """Drops the stale last transition of a restarted actor from an inference batch.

  When an actor dies with a call in flight and its replacement (same env ids, new run ids)
  joins the same batch, the old call's rows are "dying": their env id needs a reset but the
  row itself carries the old run id.

  Args:
    envs_needing_reset: `<int32>[k]` env ids whose run id changed in this batch.
    reset_mask: `<bool>[N]`, True for the rows carrying a new run id.
    env_ids: `<int32>[N]` env id of every row.

  Returns:
    `(nondying_mask <bool>[N], nondying_env_ids)`. Raises InvalidArgumentError if an env id
    still appears twice afterwards.
  """
  env_ids = tf.convert_to_tensor(env_ids)
  needs_reset = tf.reduce_any(
      env_ids[:, tf.newaxis] == tf.cast(envs_needing_reset, env_ids.dtype)[tf.newaxis, :],
      axis=1)
  dying = tf.logical_and(needs_reset, tf.logical_not(reset_mask))
  if tf.reduce_any(dying):
    tf.print('Dropping dying transitions of environment ids:', tf.boolean_mask(env_ids, dying))
  nondying_mask = tf.logical_not(dying)
  nondying_env_ids = tf.boolean_mask(env_ids, nondying_mask)
  with tf.control_dependencies([_assert_unique_ids(
      nondying_env_ids, 'Environment ids appear more than once in one inference batch '
      'after removing dying transitions (an actor restarted twice within one batch?)')]):
    return tf.identity(nondying_mask), tf.identity(nondying_env_ids)


# ------------------------------------------------------------------------------------------------
# TPU transfer encoding: uint8 and oddly-shaped float32 tensors are slow to send to TPUs.


class TPUEncodedUInt8(tf.experimental.ExtensionType):
  """uint8 tensor with the batch axis moved last and packed four bytes per uint32."""
  encoded: tf.Tensor
  original_shape: tf.TensorShape


class TPUEncodedF32(tf.experimental.ExtensionType):
  """float32 tensor flattened to one dimension (TPU-friendly layout)."""
  encoded: tf.Tensor
  original_shape: tf.TensorShape


def _to_batch_last(t):
  rank = t.shape.rank
  return tf.transpose(t, list(range(1, rank)) + [0])


def _from_batch_last(t):
  rank = t.shape.rank
  return tf.transpose(t, [rank - 1] + list(range(rank - 1)))


def _encode_uint8(t):
  """Moves the batch axis last and packs groups of 4 batch entries into one uint32."""
  x = tf.cast(_to_batch_last(t), tf.uint32)
  shape = x.shape.as_list()
  x = tf.reshape(x, shape[:-1] + [shape[-1] // 4, 4])
  packed = (x[..., 0] | tf.bitwise.left_shift(x[..., 1], 8) |
            tf.bitwise.left_shift(x[..., 2], 16) | tf.bitwise.left_shift(x[..., 3], 24))
  return TPUEncodedUInt8(packed, t.shape)


def _decode_uint8(e: TPUEncodedUInt8):
  parts = [tf.bitwise.bitwise_and(tf.bitwise.right_shift(e.encoded, 8 * i), 0xFF)
           for i in range(4)]
  x = tf.cast(tf.stack(parts, axis=-1), tf.uint8)
  batch_last = e.original_shape[1:].concatenate(e.original_shape[:1])
  return _from_batch_last(tf.reshape(x, batch_last))


def _float32_is_tpu_friendly(shape: tf.TensorShape) -> bool:
  dims = shape.as_list()
  return any(d % 128 == 0 for d in dims) and sum(d % 8 == 0 for d in dims) >= 2


def tpu_encode(ts):
  """Encodes a nest for fast transfer to TPU.

  uint8 with a batch (first) dimension divisible by 4 and a multiple of 128 elements →
  `TPUEncodedUInt8`; other uint8 → bfloat16 (with a warning); uint16 → int32; float32 of rank
  > 1 without a TPU-friendly layout → `TPUEncodedF32`. Needs fully defined static shapes.
  """

  def encode(t):
    t = tf.convert_to_tensor(t)
    if t.dtype == tf.uint8:
      shape = t.shape
      if (shape.rank and shape.rank >= 1 and shape.is_fully_defined() and shape[0] % 4 == 0
          and shape.num_elements() % 128 == 0):
        return _encode_uint8(t)
      logging.warning('Inefficient uint8 transfer with shape %s', shape)
      return tf.cast(t, tf.bfloat16)
    if t.dtype == tf.uint16:
      return tf.cast(t, tf.int32)
    if (t.dtype == tf.float32 and t.shape.rank is not None and t.shape.rank > 1 and
        t.shape.is_fully_defined() and not _float32_is_tpu_friendly(t.shape)):
      return TPUEncodedF32(tf.reshape(t, [-1]), t.shape)
    return t

  return tf.nest.map_structure(encode, ts)


def tpu_decode(ts, structure=None):
  """Inverts `tpu_encode`.

  `structure` (the un-encoded nest or its specs) restores dtypes that `tpu_encode` widened
  (bfloat16 → uint8, int32 → uint16); without it those stay widened.
  """

  def decode(e, original=None):
    if isinstance(e, TPUEncodedUInt8):
      return _decode_uint8(e)
    if isinstance(e, TPUEncodedF32):
      return tf.reshape(e.encoded, e.original_shape)
    if original is not None and e.dtype != original.dtype:
      return tf.cast(e, original.dtype)
    return e

  if structure is None:
    return tf.nest.map_structure(decode, ts, expand_composites=False)
  return tf.nest.map_structure(decode, ts, structure, expand_composites=False)
