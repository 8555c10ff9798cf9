"""Test entry point: the gym V-trace learner on a CPU split into two logical devices.

Exercises the multi-device path (MirroredStrategy, one inference function per device) that
several GPUs take, on a machine without GPUs.
"""

from absl import app
import tensorflow as tf

from seed_rl.environments.gym import vtrace_main

if __name__ == '__main__':
  tf.config.set_logical_device_configuration(
      tf.config.list_physical_devices('CPU')[0], [tf.config.LogicalDeviceConfiguration()] * 2)
  app.run(vtrace_main.main)
