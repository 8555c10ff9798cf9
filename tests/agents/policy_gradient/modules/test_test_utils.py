"""Tests for seed_rl.agents.policy_gradient.modules.test_utils (the original's test support).

`simulate_two_devices` and `create_distribution_strategy` with two replicas are exercised by
test_running_statistics.py's two-replica programs, which start with them.
"""

import os
import unittest

import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import test_utils
from seed_rl.common.learner_runtime import devices

pytestmark = pytest.mark.timeout(60)


def test_test_case_runs_on_the_primary_device_with_strict_autograph():
  seen = {}
  before = os.environ.get('AUTOGRAPH_STRICT_CONVERSION')

  class Placement(test_utils.TestCase):  # Defined here so that pytest does not collect it.

    def test_record(self):
      seen.update(device=tf.constant(1.).device, primary=self.primary_device,
                  on_tpu=self.on_tpu, strict=os.environ.get('AUTOGRAPH_STRICT_CONVERSION'))

  result = unittest.TestResult()
  Placement('test_record').run(result)
  assert result.wasSuccessful(), result.errors + result.failures
  device_type = devices.learner_devices()[0]
  assert seen == {'device': f'/job:localhost/replica:0/task:0/device:{device_type}:0',
                  'primary': device_type, 'on_tpu': False, 'strict': '1'}
  assert os.environ.get('AUTOGRAPH_STRICT_CONVERSION') == before  # Restored by tearDown.


def test_strategy_spans_the_learner_devices():
  strategy = test_utils.create_distribution_strategy(use_tpu=False)
  assert strategy.num_replicas_in_sync == len(devices.learner_devices()[1])


def test_tpu_strategy_is_refused_by_name():
  with pytest.raises(ValueError, match='TPUs are not supported'):
    test_utils.create_distribution_strategy(use_tpu=True)
