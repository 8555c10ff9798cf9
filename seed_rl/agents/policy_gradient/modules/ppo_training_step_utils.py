"""PPO's training step: several epochs of minibatch steps over one batch of unrolls.

The batch mode decides what a minibatch is. `repeat` and `shuffle` take whole unrolls (the loss
computes advantages inside each minibatch, so recurrent agents work); `split` computes the
advantages once over the whole batch and then trains on minibatches of single transitions from
all unrolls mixed (the setting of "What matters in on-policy RL", feed-forward agents only);
`split_with_advantage_recomputation` recomputes them before every epoch.
"""

import collections
from typing import Any, Callable, Iterator

import tensorflow as tf

from seed_rl.common import tensors

# Single transitions with their (normalized) value targets and advantages: each leaf `[N, ...]`.
Transitions = collections.namedtuple(
    'Transitions', 'normalized_targets normalized_advantages prev_actions env_outputs '
    'agent_outputs')

SPLIT_MODES = ('split', 'split_with_advantage_recomputation')


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
  flatten = lambda t: tf.reshape(t[:-1], [-1] + t.shape.as_list()[2:])
  return Transitions(tf.reshape(normalized_targets, [-1]),
                     tf.reshape(normalized_advantages, [-1]),
                     *tf.nest.map_structure(flatten, steps))


def minibatch_indices(num_rows: int, batches_per_step: int, shuffle: bool) -> Iterator[tf.Tensor]:
  """Indices of the `batches_per_step` minibatches of one epoch over `num_rows` rows."""
  order = tf.random.shuffle(tf.range(num_rows)) if shuffle else tf.range(num_rows)
  return iter(tf.split(order, batches_per_step))


@tf.function
def _gather(nest, indices):
  return tf.nest.map_structure(lambda t: tf.gather(t, indices), nest)


def ppo_training_step(epochs_per_step: int, compute_advantages: Callable[[Any], Any],
                      unrolls, batch_mode: str, minimize: Callable[[Any], Any],
                      batches_per_step: int) -> None:
  """Trains `epochs_per_step` epochs of `batches_per_step` minibatch steps on `unrolls`.

  Args:
    epochs_per_step: passes over the batch.
    compute_advantages: `unrolls -> (normalized_targets, normalized_advantages)`, time-major
      `[T, B]` (used by the split modes; it also updates the value normalization).
    unrolls: batch-major `Unroll`s `[B, T+1, ...]` with the recurrent state before each.
    batch_mode: one of `learner_config.BATCH_MODES`.
    minimize: one optimizer step on a minibatch: `Transitions` in the split modes, `Unroll`s
      otherwise.
    batches_per_step: minibatches per epoch; must divide the rows (unrolls or transitions).

  Raises:
    ValueError: a split mode with a recurrent agent, or rows that do not divide.
  """
  if batch_mode in SPLIT_MODES:
    if tf.nest.flatten(unrolls.agent_state):
      raise ValueError(f'batch_mode={batch_mode} trains on single transitions, which a '
                       'recurrent agent cannot; use batch_mode=repeat or shuffle.')
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
