"""Test support for the policy-gradient modules: device placement and strategies.

Tests of modules that run under a distribution strategy (the statistics trackers, PPO's
training step) use these, as the original SEED RL's tests did:

  * `TestCase`, a `tf.test.TestCase` that runs each test on the primary device (GPU if there
    is one, else CPU) with AutoGraph's strict conversion;
  * `simulate_two_devices()`, called before TensorFlow initializes its devices, splits the
    first GPU (or the CPU) into two logical devices, so that a `MirroredStrategy` with two
    replicas runs on one machine;
  * `create_distribution_strategy(use_tpu)`, the strategy over those devices.

TPU learners are not supported, so `create_distribution_strategy(use_tpu=True)` raises.
"""

import os
import sys
from typing import Iterable, Union

from absl import logging
import tensorflow as tf

from seed_rl.common.learner_runtime import devices as devices_lib

_STRICT_CONVERSION = 'AUTOGRAPH_STRICT_CONVERSION'
#: Memory of each of the two logical GPUs `simulate_two_devices` makes, in MB.
SIMULATED_GPU_MEMORY_MB = 4096

DistributionStrategy = Union[tf.distribute.Strategy, tf.distribute.OneDeviceStrategy,
                             tf.distribute.MirroredStrategy]


class TestCase(tf.test.TestCase):
  """A test case whose tests run on the primary device, with strict AutoGraph.

  Set `ENTER_PRIMARY_DEVICE = False` in a subclass to leave placement to TensorFlow.
  """

  ENTER_PRIMARY_DEVICE = True

  def setUp(self):
    super().setUp()
    # An AutoGraph conversion error fails the test instead of silently running unconverted
    # (until tearDown, which restores the previous setting).
    self._strict_conversion = os.environ.get(_STRICT_CONVERSION)
    os.environ[_STRICT_CONVERSION] = '1'
    self._device_types = frozenset(d.device_type for d in tf.config.list_logical_devices())
    self.on_tpu = 'TPU' in self._device_types
    if self.ENTER_PRIMARY_DEVICE:
      self._device = tf.device(f'/device:{self.primary_device}:0')
      self._device.__enter__()

  def tearDown(self):
    super().tearDown()
    if self.ENTER_PRIMARY_DEVICE:
      self._device.__exit__(*sys.exc_info())
      del self._device
    if self._strict_conversion is None:
      os.environ.pop(_STRICT_CONVERSION, None)
    else:
      os.environ[_STRICT_CONVERSION] = self._strict_conversion

  @property
  def primary_device(self) -> str:
    """'TPU', 'GPU' or 'CPU': the first of them this process has."""
    for device_type in ('TPU', 'GPU'):
      if device_type in self._device_types:
        return device_type
    return 'CPU'


def simulate_two_devices(device_types: Iterable[str] = ('GPU', 'CPU')) -> None:
  """Splits the first physical device of the first type present into two logical ones.

  Call it before TensorFlow initializes its devices (e.g. in `setUpModule`); afterwards
  TensorFlow raises a RuntimeError. A GPU's halves get `SIMULATED_GPU_MEMORY_MB` each.

  Raises:
    ValueError: If a type has several physical devices (nothing needs splitting then).
  """
  for device_type in device_types:
    devices = tf.config.list_physical_devices(device_type)
    if not devices:
      continue
    if len(devices) != 1:
      raise ValueError(f'simulate_two_devices: {len(devices)} physical {device_type} devices '
                       'exist already; use them instead of splitting one')
    memory_limit = SIMULATED_GPU_MEMORY_MB if device_type == 'GPU' else None
    tf.config.set_logical_device_configuration(
        devices[0], [tf.config.LogicalDeviceConfiguration(memory_limit=memory_limit)] * 2)
    logging.info('Split %s into two logical devices (memory limit %s MB).', devices[0],
                 memory_limit)
    return
  logging.error('simulate_two_devices: no device of the types %s to split; physical '
                'devices: %s', list(device_types), tf.config.list_physical_devices())


def create_distribution_strategy(use_tpu: bool) -> DistributionStrategy:
  """A `MirroredStrategy` over the logical GPUs (else CPUs), or `OneDeviceStrategy` for one.

  Raises:
    ValueError: With `use_tpu`: TPU learners are not supported.
  """
  if use_tpu:
    raise ValueError('create_distribution_strategy(use_tpu=True): TPUs are not supported; '
                     'use use_tpu=False (GPUs, or the CPU)')
  _, devices = devices_lib.learner_devices()
  strategy = devices_lib.strategy_over(devices)
  logging.info('Distribution strategy %s over %s.', type(strategy).__name__, devices)
  return strategy
