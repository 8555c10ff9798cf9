"""One optimizer step of an agent's loss on every replica of the learner's strategy."""

from typing import Any, Dict

import tensorflow as tf

from seed_rl.common import progress_logger
from seed_rl.common.learner_runtime import agent as agent_lib


def _split_over_replicas(strategy: tf.distribute.Strategy, batch):
  """Gives each replica its consecutive slice of the batch (leading dimension)."""
  num_replicas = strategy.num_replicas_in_sync
  if num_replicas == 1:
    return batch
  return strategy.experimental_distribute_values_from_function(
      lambda ctx: tf.nest.map_structure(
          lambda t: tf.split(t, num_replicas)[ctx.replica_id_in_sync_group], batch))


def _gather_over_replicas(strategy: tf.distribute.Strategy, value) -> tf.Tensor:
  """A scalar's mean over replicas; a per-example tensor's slices concatenated in order."""
  local = strategy.experimental_local_results(value)
  if local[0].shape.rank == 0:
    return tf.reduce_mean(tf.stack(local))
  return tf.concat(local, axis=0)


def create_minimize(strategy: tf.distribute.Strategy, agent: agent_lib.LearnerAgent,
                    optimizer: Any, logger: progress_logger.ProgressLogger,
                    frames_per_iteration: int) -> agent_lib.Minimize:
  """`minimize(batch) -> metrics`: one gradient step of `agent.compute_loss` on `batch`.

  The batch is split over the replicas, whose gradients are summed; gradients are clipped to
  `agent.clip_norm` when it is set. The metrics (plus `gradient_norm_before_clip`) go to the
  progress logger, whose step advances by `frames_per_iteration`.
  """
  num_replicas = strategy.num_replicas_in_sync
  trainable_variables = agent.trainable_variables

  def replica_step(batch) -> Dict[str, tf.Tensor]:
    with tf.GradientTape() as tape:
      loss, metrics = agent.compute_loss(batch)
      scaled_loss = loss / num_replicas  # Gradients are summed over replicas.
    gradients = tape.gradient(scaled_loss, trainable_variables)
    gradient_norm = tf.linalg.global_norm(gradients)
    if agent.clip_norm:
      gradients, _ = tf.clip_by_global_norm(gradients, agent.clip_norm, use_norm=gradient_norm)
    optimizer.apply_gradients(zip(gradients, trainable_variables))
    callback = getattr(agent.network, 'end_of_training_step_callback', None)
    if callback is not None:
      callback()
    return dict(metrics, gradient_norm_before_clip=gradient_norm)

  @tf.function
  def minimize(batch) -> Dict[str, tf.Tensor]:
    per_replica = strategy.run(replica_step, (_split_over_replicas(strategy, batch),))
    metrics = {name: _gather_over_replicas(strategy, value)
               for name, value in per_replica.items()}
    logger.step_end(logger.log_session_from_dict(metrics), step_increment=frames_per_iteration)
    return metrics

  return minimize
