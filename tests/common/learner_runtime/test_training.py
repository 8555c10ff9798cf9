"""A training step whose loss or gradients are not finite is skipped, on one device or several."""

import json
import math
import subprocess
import sys

import pytest

from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize('num_devices', [1, 2])
def test_a_non_finite_step_is_skipped_and_counted(num_devices):
  result = subprocess.run(
      [sys.executable, '-m', 'tests.common.learner_runtime.minimize_checks', str(num_devices)],
      cwd=ROOT, capture_output=True, text=True, timeout=100,
      env={'PYTHONPATH': str(ROOT), 'TF_CPP_MIN_LOG_LEVEL': '2', 'PATH': '/usr/bin:/bin'})
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads(result.stdout.strip().splitlines()[-1])
  assert report['replicas'] == num_devices
  first, nan, last = report['steps']
  assert first['iterations'] == 1 and first['w'] < 1 and first['skipped_steps'] == 0
  # The NaN batch (on one replica only, with two devices) changes nothing but the count.
  assert nan['iterations'] == 1 and nan['w'] == first['w'] and nan['slots'] == first['slots']
  assert nan['skipped_steps'] == 1
  assert all(math.isfinite(v) for v in nan['slots'])
  assert last['iterations'] == 2 and last['w'] < first['w'] and last['skipped_steps'] == 1
