"""Runs the runtime's `minimize` on a finite batch, a NaN batch and a finite batch again.

Run as a script with the number of logical CPU devices (they must be configured before
TensorFlow initialises); prints one JSON line for tests/common/learner_runtime/test_training.py.
"""

import json
import sys

import tensorflow as tf


def main(num_devices: int) -> None:
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * num_devices)
  # pylint: disable=g-import-not-at-top
  from seed_rl.common.learner_runtime import agent as agent_lib
  from seed_rl.common.learner_runtime import devices
  from seed_rl.common.learner_runtime import progress_logger
  from seed_rl.common.learner_runtime import training
  # pylint: enable=g-import-not-at-top

  class LinearAgent(agent_lib.LearnerAgent):
    """loss = mean(w * batch): the batch's values become the gradient."""

    def compute_loss(self, batch):
      loss = tf.reduce_mean(self.network.w * batch)
      return loss, {'loss': loss}

  strategy = devices.init_learner().strategy
  agent = LinearAgent(config=None)
  with strategy.scope():
    agent.network = tf.Module()
    agent.network.w = tf.Variable(1.0)
    optimizer = tf.keras.optimizers.Adam(0.1)
    optimizer.build(agent.trainable_variables)
  minimize = training.create_minimize(strategy, agent, optimizer,
                                      progress_logger.ProgressLogger())
  results = []
  for values in ([1., 1.], [1., float('nan')], [1., 1.]):
    metrics = minimize(tf.constant(values))
    results.append({'w': float(agent.network.w.numpy()),
                    'iterations': int(optimizer.iterations.numpy()),
                    'slots': [float(tf.reduce_sum(v)) for v in optimizer.variables[1:]],
                    'skipped_steps': int(metrics['skipped_steps'])})
  print(json.dumps({'replicas': strategy.num_replicas_in_sync, 'steps': results}))


if __name__ == '__main__':
  main(int(sys.argv[1]))
