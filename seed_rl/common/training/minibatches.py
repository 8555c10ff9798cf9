"""Epochs of minibatch steps over one batch of unrolls (PPO's training step, V-trace's epochs).

Any agent whose learner makes several optimizer steps per training step uses it; the original
named it `agents/policy_gradient/modules/ppo_training_step_utils`, which still re-exports it.

The batch mode decides what a minibatch is. `repeat` and `shuffle` take whole unrolls (the loss
computes advantages inside each minibatch, so recurrent agents work); `split` computes the
advantages once over the whole batch and then trains on minibatches of single transitions from
all unrolls mixed (the setting of "What matters in on-policy RL", feed-forward agents only);
`split_with_advantage_recomputation` recomputes them before every epoch.

Two faces share the epochs: `train_epochs` takes batch-major unrolls `[B, T+1, ...]` and a
`minimize` callback (the learners' face: the learner runtime owns the optimizer step, its
distribution and its logging); `ppo_training_step`, SEED RL's library signature, takes
time-major unrolls `[T+1, B, ...]`, a loss, an optimizer and a logger, and makes the optimizer
steps itself. `compute_advantages_and_split` is the library's split into transitions.
"""

import collections
from typing import Any, Callable, Iterator
import weakref

import tensorflow as tf

from seed_rl.common.training import logging_module
from seed_rl.common.training import tensors

# Single transitions with their (normalized) value targets and advantages: each leaf `[N, ...]`.
Transitions = collections.namedtuple(
    'Transitions', 'normalized_targets normalized_advantages prev_actions env_outputs '
    'agent_outputs')

SPLIT_MODES = ('split', 'split_with_advantage_recomputation')
# Every batch mode: whole unrolls (`repeat`: the same minibatches every epoch, `shuffle`: drawn
# anew every epoch), then single transitions.
BATCH_MODES = ('repeat', 'shuffle') + SPLIT_MODES


def _merge_time_and_batch(t: tf.Tensor) -> tf.Tensor:
  """`[T, B, ...]` -> `[T*B, ...]`."""
  return tf.reshape(t, [-1] + t.shape.as_list()[2:])


def _refuse_recurrent_state(agent_state: Any, batch_mode: str) -> None:
  if tf.nest.flatten(agent_state):
    raise ValueError(f'batch_mode={batch_mode} trains on single transitions, which a '
                     'recurrent agent cannot; use batch_mode=repeat or shuffle.')


def split_into_transitions(unrolls, normalized_targets: tf.Tensor,
                           normalized_advantages: tf.Tensor) -> Transitions:
  """The `[T, B]` transitions of batch-major `[B, T+1, ...]` unrolls, flattened to `[T*B]`.

  The last step of each unroll only bootstraps the one before, so it is dropped; the targets
  and advantages (time-major `[T, B]`) must cover exactly the remaining steps.

  Raises:
    ValueError: "Timesteps mismatch" or "Batch size mismatch" between unrolls and targets.
  """
  steps = tensors.make_time_major((unrolls.prev_actions, unrolls.env_outputs,
                                   unrolls.agent_outputs))
  unroll_shape = tf.nest.flatten(steps)[0].shape
  for values in (normalized_targets, normalized_advantages):
    if values.shape[0] != unroll_shape[0] - 1:
      raise ValueError(f'Timesteps mismatch: targets and advantages of {values.shape[0]} steps '
                       f'for unrolls of {unroll_shape[0]} steps (expected one less).')
    if values.shape[1] != unroll_shape[1]:
      raise ValueError(f'Batch size mismatch: targets and advantages of {values.shape[1]} '
                       f'unrolls for a batch of {unroll_shape[1]}.')
  return Transitions(_merge_time_and_batch(normalized_targets),
                     _merge_time_and_batch(normalized_advantages),
                     *tf.nest.map_structure(lambda t: _merge_time_and_batch(t[:-1]), steps))


def compute_advantages_and_split(loss_fn: Any, input_args) -> tuple[Any, ...]:
  """Advantages of time-major unrolls, then their steps as `[1, T*B, ...]` single transitions.

  Args:
    loss_fn: has `compute_advantages(agent_state, prev_actions, env_outputs, agent_outputs)`
      returning `(normalized_targets, normalized_advantages)`, e.g. a `GeneralizedOnPolicyLoss`.
    input_args: `(agent_state, prev_actions, env_outputs, agent_outputs)` (an `Unroll`), the
      last three time-major `[T+1, B, ...]`; a feed-forward agent's empty `agent_state`.

  Returns:
    `(agent_state, prev_actions, env_outputs, agent_outputs, normalized_targets,
    normalized_advantages)`: the first four without their last (bootstrap) step, every leaf
    reshaped from `[T, B, ...]` to `[1, T*B, ...]`, ready for `loss_fn(*args)`.

  Raises:
    ValueError: the agent is recurrent (its state belongs to whole unrolls).
  """
  _refuse_recurrent_state(input_args.agent_state, 'split')
  advantages = tuple(loss_fn.compute_advantages(*input_args))
  steps = tf.nest.map_structure(lambda t: t[:-1], tuple(input_args)) + advantages
  return tf.nest.map_structure(lambda t: _merge_time_and_batch(t)[tf.newaxis], steps)


def unroll_advantages(loss_fn: Any, unrolls) -> tuple[tf.Tensor, tf.Tensor]:
  """`loss_fn.compute_advantages` of batch-major `[B, T+1, ...]` unrolls: time-major `[T, B]`
  normalized targets and advantages."""
  steps = tensors.make_time_major(unrolls._replace(agent_state=()))
  return loss_fn.compute_advantages(unrolls.agent_state, steps.prev_actions, steps.env_outputs,
                                    steps.agent_outputs)


def minibatch_loss(loss_fn: Any, minibatch) -> tf.Tensor:
  """The loss of one minibatch of `train_epochs`: `Transitions`, or batch-major unrolls."""
  if isinstance(minibatch, Transitions):
    steps = tf.nest.map_structure(lambda t: t[tf.newaxis], minibatch)  # [1, N]: one step.
    return loss_fn((), steps.prev_actions, steps.env_outputs, steps.agent_outputs,
                   normalized_targets=steps.normalized_targets,
                   normalized_advantages=steps.normalized_advantages)
  steps = tensors.make_time_major(minibatch._replace(agent_state=()))
  return loss_fn(minibatch.agent_state, steps.prev_actions, steps.env_outputs,
                 steps.agent_outputs)


def minibatch_indices(num_rows: int, batches_per_step: int, shuffle: bool) -> Iterator[tf.Tensor]:
  """Indices of the `batches_per_step` minibatches of one epoch over `num_rows` rows."""
  order = tf.random.shuffle(tf.range(num_rows)) if shuffle else tf.range(num_rows)
  return iter(tf.split(order, batches_per_step))


@tf.function
def _gather(nest, indices):
  return tf.nest.map_structure(lambda t: tf.gather(t, indices), nest)


def train_epochs(epochs_per_step: int, unrolls, batch_mode: str,
                 minimize: Callable[[Any], Any], batches_per_step: int,
                 compute_advantages: Callable[[Any], Any] | None = None) -> None:
  """Trains `epochs_per_step` epochs of `batches_per_step` minibatch steps on `unrolls`.

  Args:
    epochs_per_step: passes over the batch.
    unrolls: batch-major `Unroll`s `[B, T+1, ...]` with the recurrent state before each.
    batch_mode: one of `BATCH_MODES`.
    minimize: one optimizer step on a minibatch: `Transitions` in the split modes, `Unroll`s
      otherwise (see `minibatch_loss`).
    batches_per_step: minibatches per epoch; must divide the rows (unrolls or transitions).
    compute_advantages: `unrolls -> (normalized_targets, normalized_advantages)`, time-major
      `[T, B]` (e.g. `unroll_advantages` of the loss; it also updates the value
      normalization); needed by the split modes only.

  Raises:
    ValueError: an unknown batch mode, a split mode with a recurrent agent or without
      `compute_advantages`, or rows that do not divide.
  """
  if batch_mode not in BATCH_MODES:
    raise ValueError(f'Unknown batch_mode={batch_mode!r}; one of {BATCH_MODES}.')
  if batch_mode in SPLIT_MODES:
    _refuse_recurrent_state(unrolls.agent_state, batch_mode)
    if compute_advantages is None:
      raise ValueError(f'batch_mode={batch_mode} computes the advantages before it splits the '
                       'unrolls: pass compute_advantages.')
    data = None
    for _ in range(epochs_per_step):
      if data is None or batch_mode == 'split_with_advantage_recomputation':
        data = split_into_transitions(unrolls, *compute_advantages(unrolls))
      _train_epoch(data, minimize, batches_per_step, shuffle=True)
  else:
    for _ in range(epochs_per_step):
      _train_epoch(unrolls, minimize, batches_per_step, shuffle=batch_mode == 'shuffle')


def _train_epoch(data, minimize: Callable[[Any], Any], batches_per_step: int,
                 shuffle: bool) -> None:
  num_rows = tf.nest.flatten(data)[0].shape[0]
  if num_rows % batches_per_step:
    raise ValueError(f'Batch size mismatch: {num_rows} rows do not split into '
                     f'{batches_per_step} minibatches.')
  for indices in minibatch_indices(num_rows, batches_per_step, shuffle):
    minimize(data if batches_per_step == 1 and not shuffle else _gather(data, indices))


def _check_unroll_shapes(args, num_replicas: int, virtual_batch_size: int,
                         unroll_length: int) -> None:
  """Time-major `[unroll_length + 1, B]` steps and a `[B]` agent state, B the replica's part
  of `virtual_batch_size`."""
  steps = tf.nest.flatten((args.prev_actions, args.env_outputs, args.agent_outputs))
  timesteps, batch_size = steps[-1].shape[:2]
  for t in steps:
    if list(t.shape[:2]) != [timesteps, batch_size]:
      raise ValueError(f'Every step tensor must have the leading dimensions [time, batch] = '
                       f'[{timesteps}, {batch_size}] of the agent outputs; got {t.shape}.')
  for t in tf.nest.flatten(args.agent_state):
    if t.shape[0] != batch_size:
      raise ValueError(f'The agent state must have the leading dimension [batch] = '
                       f'[{batch_size}]; got {t.shape}.')
  if timesteps != unroll_length + 1:
    raise ValueError(f'Timesteps mismatch: unrolls of {timesteps} steps for '
                     f'unroll_length={unroll_length} (expected unroll_length + 1).')
  if num_replicas * batch_size != virtual_batch_size:
    raise ValueError(f'Batch size mismatch: {num_replicas} replicas x {batch_size} unrolls for '
                     f'virtual_batch_size={virtual_batch_size}.')


# `ppo_training_step`'s optimizer steps: loss -> optimizer -> clip norm -> step. Each step is
# one tf.function, kept while its loss and optimizer live, so that a caller running eagerly
# traces it once instead of once per training step.
_OPTIMIZER_STEPS: 'weakref.WeakKeyDictionary[Any, Any]' = weakref.WeakKeyDictionary()


def _optimizer_step(loss_fn: Any, clip_norm: float | None,
                    optimizer: Any) -> Callable[[Any], tuple[tf.Tensor, dict]]:
  """`minibatch -> (loss, logs)`: one step of `optimizer` on `loss_fn.trainable_variables`,
  the gradient clipped to the global norm `clip_norm` (None: not clipped).

  The same tf.function for the same loss, optimizer and clip norm. It holds them weakly (the
  cache is keyed by them), so that the cache does not keep a loss or optimizer alive.
  """
  steps = _OPTIMIZER_STEPS.setdefault(loss_fn, weakref.WeakKeyDictionary()).setdefault(
      optimizer, {})
  if clip_norm not in steps:
    steps[clip_norm] = _new_optimizer_step(weakref.ref(loss_fn), clip_norm,
                                           weakref.ref(optimizer))
  return steps[clip_norm]


def _new_optimizer_step(loss_ref: 'weakref.ref[Any]', clip_norm: float | None,
                        optimizer_ref: 'weakref.ref[Any]'
                        ) -> Callable[[Any], tuple[tf.Tensor, dict]]:
  """The tf.function of `_optimizer_step`, reaching loss and optimizer through weak
  references (they are alive whenever it is traced: `ppo_training_step` holds them)."""

  @tf.function
  def step(minibatch):
    loss_fn, optimizer = loss_ref(), optimizer_ref()
    with tf.GradientTape() as tape, logging_module.LoggingTape(loss_fn) as logs:
      loss = minibatch_loss(loss_fn, minibatch)
    variables = loss_fn.trainable_variables  # After the loss built the agent, if it was not.
    # Unused variables (e.g. PopArt's compensation without compensate) get zero gradients.
    gradients = tape.gradient(loss, variables,
                              unconnected_gradients=tf.UnconnectedGradients.ZERO)
    logs = dict(logs, **{'grad/norm': tf.linalg.global_norm(gradients),
                         'grad/trainable_variables': tf.linalg.global_norm(variables)})
    if clip_norm is not None:
      gradients, _ = tf.clip_by_global_norm(gradients, clip_norm, use_norm=logs['grad/norm'])
    optimizer.apply_gradients(zip(gradients, variables))
    return loss, logs

  return step


def ppo_training_step(epochs_per_step: int, loss_fn: Any, args, batch_mode: str,
                      training_strategy: tf.distribute.Strategy, virtual_batch_size: int,
                      unroll_length: int, batches_per_step: int, clip_norm: float | None,
                      optimizer: Any, logger: Any) -> tuple[tf.Tensor, Any]:
  """Trains `loss_fn` for `epochs_per_step` epochs over `args`, SEED RL's library signature.

  Runs in the caller's (replica) context: `training_strategy` only tells how many replicas
  share the virtual batch. The optimizer step is one tf.function per loss, optimizer and
  `clip_norm`, which later calls reuse: an eager caller traces it once, not every step.

  Args:
    epochs_per_step: passes over the batch.
    loss_fn: a `GeneralizedOnPolicyLoss` (or anything with its `__call__`,
      `compute_advantages` and `trainable_variables`, the agent's included).
    args: `Unroll(agent_state, prev_actions, env_outputs, agent_outputs)`, the last three
      time-major `[unroll_length + 1, B, ...]`, `agent_state` `[B, ...]` (empty: feed-forward).
    batch_mode: one of `BATCH_MODES` (see the module docstring).
    training_strategy: its `num_replicas_in_sync` replicas each train on B unrolls.
    virtual_batch_size: unrolls of all replicas together: `num_replicas_in_sync * B`.
    unroll_length: agent steps per unroll (the unrolls have one more, to bootstrap).
    batches_per_step: minibatches (optimizer steps) per epoch.
    clip_norm: the gradients' global norm is clipped to this (None: not clipped).
    optimizer: has `apply_gradients`, e.g. `tf.keras.optimizers.Adam`.
    logger: a `ProgressLogger`, for its log sessions.

  Returns:
    `(loss, logs)` of the last minibatch: the loss and a log session of the loss's logged
    values, the gradient norm before clipping (`grad/norm`) and the variables' global norm
    (`grad/trainable_variables`).

  Raises:
    ValueError: shapes that disagree with each other, `unroll_length` or `virtual_batch_size`,
      or see `train_epochs`.
  """
  _check_unroll_shapes(args, training_strategy.num_replicas_in_sync, virtual_batch_size,
                       unroll_length)
  unrolls = tensors.make_time_major(args._replace(agent_state=()))._replace(
      agent_state=args.agent_state)
  step = _optimizer_step(loss_fn, clip_norm, optimizer)
  results = []
  train_epochs(epochs_per_step, unrolls, batch_mode, lambda batch: results.append(step(batch)),
               batches_per_step, lambda u: unroll_advantages(loss_fn, u))
  loss, logs = results[-1]
  return loss, logger.log_session_from_dict(logs)
