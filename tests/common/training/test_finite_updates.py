"""Gated learner state updates (`update_gate`): refused as a whole, counted once, on one device
and on a MirroredStrategy of two replicas; the observation normalizer goes through the gate.

Run as a script (`python -m tests.common.training.test_finite_updates`) it splits the CPU into two
logical devices, which must happen before TensorFlow initialises, and prints one JSON line.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)


def _refused(kind: str) -> int:
  from seed_rl.common.training import update_gate  # pylint: disable=g-import-not-at-top
  return update_gate.refused_counts().get(f'refused {kind}', 0)


def test_observation_normalizer_refuses_a_non_finite_fold_and_keeps_working():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed_rl.common import normalizer as normalizer_lib  # pylint: disable=g-import-not-at-top
  normalizer = normalizer_lib.Normalizer()
  update = tf.function(normalizer.update)
  update(tf.constant([[1., 2.], [3., 6.]]))
  before = [v.numpy() for v in normalizer.variables]
  refused_before = _refused('observation normalizer updates')

  update(tf.constant([[np.inf, 0.], [1., 1.]]))

  assert _refused('observation normalizer updates') == refused_before + 1
  for variable, value in zip(normalizer.variables, before):
    np.testing.assert_array_equal(variable.numpy(), value)
  update(tf.constant([[5., 10.]]))
  np.testing.assert_allclose(normalizer.mean.numpy(), [3., 6.])
  assert normalizer.steps.numpy() == 3
  assert all(np.isfinite(v.numpy()).all() for v in normalizer.variables)


def test_a_refusal_on_one_replica_is_a_refusal_on_every_replica_counted_once():
  result = subprocess.run(
      [sys.executable, '-m', 'tests.common.training.test_finite_updates'],
      cwd=ROOT, capture_output=True, text=True, timeout=100,
      env={'PYTHONPATH': str(ROOT), 'TF_CPP_MIN_LOG_LEVEL': '2', 'PATH': '/usr/bin:/bin'})
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads(result.stdout.strip().splitlines()[-1])
  assert report['replicas'] == 2
  first, extreme, last = report['steps']
  assert first['refused'] == 0 and first['mean'][0] == first['mean'][1] == [2.5, 2.5]
  # 1e30 on the second replica only: both keep the old statistics, one refusal.
  assert extreme == dict(first, refused=1)
  assert last['refused'] == 1 and last['mean'][0] == last['mean'][1] == [3., 3.]
  assert all(np.isfinite(step['summed_variance']).all() for step in report['steps'])


def _two_replica_report() -> dict:
  """A tracker updated under a MirroredStrategy of two CPUs with batches of 1, 1e30, 1."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  # pylint: disable=g-import-not-at-top
  from seed_rl.agents.policy_gradient.modules import running_statistics as rs
  # pylint: enable=g-import-not-at-top
  strategy = tf.distribute.MirroredStrategy(
      [device.name for device in tf.config.list_logical_devices('CPU')])
  tracker = rs.AverageMeanStd()
  with strategy.scope():
    tracker.init(2)

  @tf.function
  def update(parts):
    return strategy.run(tracker.update, (strategy.experimental_distribute_values_from_function(
        lambda context: tf.constant(parts[context.replica_id_in_sync_group])),))

  steps = []
  for second_replica in (4., 1e30, 6.):
    update([[[1., 1.]], [[second_replica] * 2]])
    steps.append({
        'mean': [v.numpy().tolist() for v in strategy.experimental_local_results(tracker.mean)],
        'summed_variance': [v.numpy().tolist() for v in
                            strategy.experimental_local_results(tracker.summed_variance)],
        'refused': _refused('running statistics updates')})
  return {'replicas': strategy.num_replicas_in_sync, 'steps': steps}


if __name__ == '__main__':
  print(json.dumps(_two_replica_report()))
