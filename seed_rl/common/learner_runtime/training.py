"""One optimizer step of an agent's loss on every replica of the learner's strategy."""

from typing import Any, Dict

import tensorflow as tf

from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.training import update_gate

# What the learner's rate-limited warning says when a step or a state update was refused.
NON_FINITE_WARNING = (
    'Non-finite results were refused, the old values stay (extreme observations or rewards, '
    'which --refuse_observations_above and --refuse_rewards_above bound, or too high a '
    'learning rate)')


@tf.autograph.experimental.do_not_convert
def _split_over_replicas(strategy: tf.distribute.Strategy, batch):
  """Gives each replica its consecutive slice of the batch (leading dimension)."""
  num_replicas = strategy.num_replicas_in_sync
  if num_replicas == 1:
    return batch
  return strategy.experimental_distribute_values_from_function(
      lambda ctx: tf.nest.map_structure(
          lambda t: tf.split(t, num_replicas)[ctx.replica_id_in_sync_group], batch))


@tf.autograph.experimental.do_not_convert
def _gather_over_replicas(strategy: tf.distribute.Strategy, value) -> tf.Tensor:
  """A scalar's mean over replicas; a per-example tensor's slices concatenated in order."""
  local = strategy.experimental_local_results(value)
  if local[0].shape.rank == 0:
    return tf.reduce_mean(tf.stack(local))
  return tf.concat(local, axis=0)


@tf.autograph.experimental.do_not_convert
def _apply_if_finite(optimizer: Any, gradients, variables, loss,
                     skipped_steps: tf.Variable) -> tf.Tensor:
  """Applies `gradients` only when the loss and the gradients of every replica are finite;
  otherwise counts a skipped step, so a NaN or Inf never reaches the weights or the optimizer's
  state. Call in a replica context; returns whether the step was applied.

  The decision is taken once for all replicas, in a cross-replica context: applying gradients
  synchronizes the replicas, which a condition inside one replica cannot do.
  """
  context = tf.distribute.get_replica_context()
  bad_replicas = context.all_reduce(
      tf.distribute.ReduceOp.SUM,
      1 - tf.cast(update_gate.all_finite([loss] + list(gradients)), tf.int32))

  def decide(strategy, bad_replicas, gradients):
    def apply():
      strategy.extended.call_for_each_replica(
          lambda g: optimizer.apply_gradients(zip(g, variables)), args=(gradients,))

    def skip():
      skipped_steps.assign_add(1)

    tf.cond(strategy.experimental_local_results(bad_replicas)[0] == 0, apply, skip)

  context.merge_call(decide, args=(bad_replicas, gradients))
  return tf.equal(bad_replicas, 0)


def create_minimize(strategy: tf.distribute.Strategy, agent: agent_lib.LearnerAgent,
                    optimizer: Any, logger: progress_logger.ProgressLogger) -> agent_lib.Minimize:
  """`minimize(batch) -> metrics`: one gradient step of `agent.compute_loss` on `batch`.

  The batch is split over the replicas, whose gradients are summed; gradients are clipped to
  `agent.clip_norm` when it is set. A step whose loss or gradients are not finite is skipped
  (the optimizer's step counter does not advance) and counted in `skipped_steps`. The metrics
  (plus `gradient_norm_before_clip` and `skipped_steps`) go to the progress logger; its step
  (frames) is the runtime's to advance, once per training iteration. The logger watches the
  skipped steps and the refused state updates (`update_gate`): a warning when they rise (at
  most one a minute) and their totals in `logger.counts_summary()`.
  """
  num_replicas = strategy.num_replicas_in_sync
  trainable_variables = agent.trainable_variables
  skipped_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='skipped_steps')
  logger.watch_counts(
      lambda: {'skipped optimizer steps': int(skipped_steps.numpy()),
               **update_gate.refused_counts()},
      NON_FINITE_WARNING)

  def replica_step(batch) -> Dict[str, tf.Tensor]:
    with tf.GradientTape() as tape:
      loss, metrics = agent.compute_loss(batch)
      scaled_loss = loss / num_replicas  # Gradients are summed over replicas.
    # A variable the loss does not use (e.g. an unused normalization compensation) gets a zero
    # gradient, not None, so that every optimizer step updates the same variables.
    gradients = tape.gradient(scaled_loss, trainable_variables,
                              unconnected_gradients=tf.UnconnectedGradients.ZERO)
    gradient_norm = tf.linalg.global_norm(gradients)
    if agent.clip_norm:
      gradients, _ = tf.clip_by_global_norm(gradients, agent.clip_norm, use_norm=gradient_norm)
    _apply_if_finite(optimizer, gradients, trainable_variables, loss, skipped_steps)
    callback = getattr(agent.network, 'end_of_training_step_callback', None)
    if callback is not None:
      callback()
    return dict(metrics, gradient_norm_before_clip=gradient_norm)

  @tf.function
  def minimize(batch) -> Dict[str, tf.Tensor]:
    per_replica = strategy.run(replica_step, (_split_over_replicas(strategy, batch),))
    metrics = {name: _gather_over_replicas(strategy, value)
               for name, value in per_replica.items()}
    metrics['skipped_steps'] = tf.identity(skipped_steps)
    logger.step_end(logger.log_session_from_dict(metrics), step_increment=0)
    return metrics

  return minimize
