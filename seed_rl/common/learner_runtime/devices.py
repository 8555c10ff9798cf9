"""The learner's devices: one strategy over all GPUs (or the CPU), one inference device each.

TPU learners are not supported yet: a learner trains and runs inference on the visible GPUs, or
on the CPU when there is none.
"""

import collections
from typing import List, Tuple

from absl import logging
import tensorflow as tf

# strategy: holds the variables and trains; inference_devices: one inference function per
# device; training_strategy, encode, decode: the original's TPU hooks, kept so that code written
# against `init_learner` still unpacks five values (`strategy` itself and identity functions).
Settings = collections.namedtuple(
    'Settings', 'strategy inference_devices training_strategy encode decode')


def _identity(value, *unused_args):
  return value


def learner_devices() -> Tuple[str, List[str]]:
  """(device type, device names) the learner computes on.

  All visible GPUs; without a GPU all logical CPU devices (normally one; a user who split the
  CPU into several logical devices gets a replica on each, which is also how the multi-device
  path is exercised without GPUs).
  """
  gpus = tf.config.list_logical_devices('GPU')
  if gpus:
    return 'GPU', [d.name for d in gpus]
  return 'CPU', [d.name for d in tf.config.list_logical_devices('CPU')]


def strategy_over(devices: List[str]) -> tf.distribute.Strategy:
  """MirroredStrategy over `devices`, or OneDeviceStrategy when there is one."""
  if len(devices) > 1:
    return tf.distribute.MirroredStrategy(devices)
  return tf.distribute.OneDeviceStrategy(devices[0])


def init_learner(num_training_tpus: int = 1) -> Settings:
  """Chooses the learner's devices and distribution strategy.

  GPUs: a MirroredStrategy over all visible GPUs (the original used only GPU:0) and one
  inference device per GPU. CPU: OneDeviceStrategy on the CPU (MirroredStrategy when the CPU
  was split into several logical devices). Variables not created under the strategy's scope
  are placed on the host CPU, as in the original.

  Args:
    num_training_tpus: the original's TPU setting; any value other than 1 is refused because
      TPU learners are not supported yet.
  """
  if num_training_tpus != 1:
    raise ValueError(f'num_training_tpus={num_training_tpus}: TPU learners are not supported '
                     'yet; the learner uses all visible GPUs, or the CPU.')
  tf.device('/cpu').__enter__()  # Default placement for everything not under a strategy.
  device_type, devices = learner_devices()
  strategy = strategy_over(devices)
  logging.info('Learner uses %d %s device(s): %s', len(devices), device_type, devices)
  return Settings(strategy, devices, strategy, _identity, _identity)
