"""The gym V-trace learner with its device split in two.

  python -m bench.two_device_learner --run_mode=learner [seed_rl.environments.gym.vtrace_main's flags]

Before TensorFlow initialises, the first GPU (or, on a machine without one, the CPU) is split
into two logical devices, so that the learner takes its multi-device path — MirroredStrategy
with a replica and an inference function on each device, gradients summed over the replicas —
on a machine with a single device. `tests/agents/vtrace/test_end_to_end.py` runs it on the CPU,
`bench/gpu_checks.sh` on a GPU.
"""

from absl import app
import tensorflow as tf

from seed_rl.environments.gym import vtrace_main

# Each logical GPU's memory: far more than the gym networks need, far less than any GPU has.
GPU_MEMORY_MB = 2048


def split_first_device() -> None:
  """Makes the first GPU, or the CPU when there is no GPU, two logical devices."""
  gpus = tf.config.list_physical_devices('GPU')
  if gpus:
    tf.config.set_logical_device_configuration(
        gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=GPU_MEMORY_MB)] * 2)
  else:
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices('CPU')[0], [tf.config.LogicalDeviceConfiguration()] * 2)


if __name__ == '__main__':
  split_first_device()
  app.run(vtrace_main.main)
