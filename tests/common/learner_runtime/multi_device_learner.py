"""Runs utils.init_learner on a CPU split into two logical devices and trains one step.

Run as a script (logical devices must be configured before TensorFlow initialises); prints one
JSON line of results for tests/common/learner_runtime/test_devices.py.
"""

import json

import tensorflow as tf


def main():
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

  from seed_rl.common import utils  # pylint: disable=g-import-not-at-top
  settings = utils.init_learner(num_training_tpus=1)
  strategy = settings.strategy
  with strategy.scope():
    weight = tf.Variable(1.0)
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
    optimizer.build([weight])

  # One inference function per inference device, each reading the (mirrored) weight.
  inference_results = []
  for device in settings.inference_devices:
    with tf.device(device):
      doubled = tf.function(lambda x: x * weight)(tf.constant(2.0))
    inference_results.append((doubled.device, float(doubled)))

  def replica_step(x):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(weight * x)
    gradient = tape.gradient(loss, weight)
    optimizer.apply_gradients([(gradient, weight)])
    return tf.distribute.get_replica_context().replica_id_in_sync_group

  @tf.function
  def train_step():
    # Replica i sees x = i + 1; the gradients are summed over replicas: 1 + 2 = 3.
    per_replica_x = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(float(ctx.replica_id_in_sync_group + 1)))
    return strategy.run(replica_step, args=(per_replica_x,))

  replica_ids = strategy.experimental_local_results(train_step())
  print(json.dumps({
      'strategy': type(strategy).__name__,
      'num_replicas': strategy.num_replicas_in_sync,
      'inference_devices': settings.inference_devices,
      'inference_results': inference_results,
      'replica_ids': [int(r) for r in replica_ids],
      'weight_per_replica': [float(v) for v in strategy.experimental_local_results(weight)],
  }))


if __name__ == '__main__':
  main()
