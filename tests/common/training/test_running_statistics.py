"""Tests of seed_rl.common.training.running_statistics."""

import json
import os
import subprocess
import sys

import gin
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.training import running_statistics as rs
from tests.processes import ROOT

REPO_ROOT = str(ROOT)

# Defines `strategy` (MirroredStrategy over the CPU split in two) and
# `on_replicas(fn, parts)`, which runs `fn(part)` on replica i with
# `parts[i]` inside one tf.function and returns the per-replica results.
_TWO_REPLICA_PRELUDE = r'''
import json
import numpy as np
import tensorflow as tf
from seed_rl.agents.policy_gradient.modules import test_utils
test_utils.simulate_two_devices()
strategy = test_utils.create_distribution_strategy(use_tpu=False)
assert isinstance(strategy, tf.distribute.MirroredStrategy), strategy
assert strategy.num_replicas_in_sync == 2


def on_replicas(fn, parts):
  @tf.function
  def run():
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(parts[ctx.replica_id_in_sync_group]))
    return strategy.run(fn, (values,))
  return strategy.experimental_local_results(run())


def replica_copies_differ(module):
  """Largest difference between the replicas' copies of any variable."""
  return max([float(np.max(np.abs(
      np.asarray(a, np.float64) - np.asarray(b, np.float64))))
      for a, b in (strategy.experimental_local_results(v)
                   for v in module.variables)] + [0.])
'''


def run_two_replica_script(body: str) -> dict:
  """Runs `body` after the two-replica prelude in a fresh interpreter.

  Logical devices must be configured before TensorFlow initializes, hence
  the subprocess. `body` prints one line `RESULT <json>`, which is returned.
  """
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', CUDA_VISIBLE_DEVICES='')
  env['PYTHONPATH'] = os.pathsep.join(
      p for p in (REPO_ROOT, env.get('PYTHONPATH')) if p)
  proc = subprocess.run(
      [sys.executable, '-c', _TWO_REPLICA_PRELUDE + body],
      capture_output=True, text=True, timeout=150, env=env, cwd=REPO_ROOT,
      check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = [line for line in proc.stdout.splitlines()
           if line.startswith('RESULT ')]
  assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
  return json.loads(lines[-1][len('RESULT '):])


TRACKERS = {
    'ema': (lambda: rs.EMAMeanStd(beta=.5), 2),
    'average': (rs.AverageMeanStd, 4),
    'two_level': (rs.TwoLevelAverageMeanStd, 8),
    'fixed': (lambda: rs.FixedMeanStd(1., 10.), 0),
}


def _data() -> tf.Tensor:
  return tf.reshape(tf.range(200, dtype=tf.float32), (20, 10))


def _initialized(factory, size=10):
  tracker = factory()
  tracker.init(size)
  return tracker


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', sorted(TRACKERS))
def test_variable_counts(name):
  factory, num_variables = TRACKERS[name]
  tracker = _initialized(factory)
  assert len(tracker.variables) == num_variables
  assert not tracker.trainable_variables
  tracker.init(10)  # Same size again: nothing new.
  assert len(tracker.variables) == num_variables


@pytest.mark.timeout(60)
@pytest.mark.parametrize('factory', [
    rs.EMAMeanStd, rs.AverageMeanStd, lambda: rs.AverageMeanStd(.1),
    rs.TwoLevelAverageMeanStd, rs.FixedMeanStd])
def test_init_is_zero_mean_unit_std(factory):
  mean, std = _initialized(factory).get_mean_std()
  np.testing.assert_allclose(mean, np.zeros(10))
  np.testing.assert_allclose(std, np.ones(10))


@pytest.mark.timeout(60)
@pytest.mark.parametrize('factory', [
    lambda: rs.EMAMeanStd(beta=1.), rs.AverageMeanStd,
    rs.TwoLevelAverageMeanStd])
def test_normalization_gives_zero_mean_unit_std(factory):
  tracker = _initialized(factory)
  data = _data()
  first, second = tf.split(data, 2)
  tracker.update(first)
  tf.function(tracker.update)(second)  # Graph and eager updates agree.
  if isinstance(tracker, rs.EMAMeanStd):
    tracker.update(data)  # beta=1: only the last batch counts.
  normalized = tracker.normalize(data).numpy()
  np.testing.assert_allclose(normalized.mean(0), 0., atol=1e-5)
  np.testing.assert_allclose(normalized.std(0), 1., atol=1e-5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', sorted(TRACKERS))
def test_invertible(name):
  tracker = _initialized(TRACKERS[name][0])
  data = _data()
  tracker.update(data)
  np.testing.assert_allclose(tracker.unnormalize(tracker.normalize(data)),
                             data, rtol=1e-5, atol=1e-4)


@pytest.mark.timeout(60)
def test_ema_moments():
  tracker = _initialized(lambda: rs.EMAMeanStd(beta=.5))
  data = _data()
  tf.function(tracker.update)(data)
  np.testing.assert_allclose(tracker.first_moment,
                             .5 * data.numpy().mean(0), rtol=1e-6)
  np.testing.assert_allclose(tracker.second_moment,
                             .5 + .5 * (data.numpy() ** 2).mean(0), rtol=1e-6)
  mean, std = tracker.get_mean_std()
  np.testing.assert_allclose(mean, tracker.first_moment.numpy())
  np.testing.assert_allclose(
      std, np.sqrt(tracker.second_moment.numpy() - mean.numpy() ** 2))
  tracker.update(tf.zeros([0, 10]))  # An empty batch changes nothing.
  np.testing.assert_allclose(tracker.get_mean_std()[0], mean)


@pytest.mark.timeout(60)
def test_ema_std_bounds():
  tracker = _initialized(lambda: rs.EMAMeanStd(1., std_min_value=.5,
                                               std_max_value=2.), 2)
  tracker.update(tf.constant([[3., -100.], [3., 100.]]))
  np.testing.assert_allclose(tracker.get_mean_std()[1], [.5, 2.])


@pytest.mark.timeout(60)
def test_fixed_mean_std_ignores_updates():
  tracker = _initialized(lambda: rs.FixedMeanStd(1., 10.))
  data = _data()
  before = tracker.normalize(data)
  tracker.update(data)
  np.testing.assert_allclose(before, (data - 1.) / 10.)
  np.testing.assert_allclose(tracker.normalize(data), before)
  vector = _initialized(lambda: rs.FixedMeanStd([1., 2.], [3., 4.]), 2)
  np.testing.assert_allclose(vector.normalize(tf.constant([[4., 6.]])),
                             [[1., 1.]])


@pytest.mark.timeout(60)
def test_average_matches_numpy_over_uneven_batches():
  rng = np.random.default_rng(1)
  batches = [rng.normal(3., 2., size=shape).astype(np.float32)
             for shape in ((5, 4, 3), (1, 3), (0, 3), (17, 3))]
  tracker = _initialized(rs.AverageMeanStd, 3)
  for batch in batches:
    tracker.update(batch)  # [T, B, D]: all leading dims are rows.
  data = np.concatenate([b.reshape(-1, 3) for b in batches])
  mean, std = tracker.get_mean_std()
  np.testing.assert_allclose(mean, data.mean(0), rtol=1e-5)
  np.testing.assert_allclose(std, data.std(0), rtol=1e-5)
  assert tracker.observation_count.numpy() == len(data)
  assert tracker.update_count.numpy() == len(batches)


def _stats(tracker):
  return [v.numpy() for v in (tracker.observation_count, tracker.mean,
                              tracker.summed_variance, tracker.update_count)]


@pytest.mark.timeout(60)
def test_average_merge_and_reset():
  data = _data()
  merged, other, reference = [_initialized(rs.AverageMeanStd)
                              for _ in range(3)]
  merged.update(data[:6])
  other.update(data[6:])
  reference.update(data)
  before = _stats(merged)
  merged.merge(other, tf.constant(0.))  # alpha 0: no-op.
  for got, want in zip(_stats(merged), before):
    np.testing.assert_array_equal(got, want)
  merged.merge(other)
  for got, want in zip(merged.get_mean_std(), reference.get_mean_std()):
    np.testing.assert_allclose(got, want, rtol=1e-5)
  assert merged.observation_count.numpy() == 20
  assert merged.update_count.numpy() == 2
  mean, std = merged.get_mean_std()
  merged.reset(0.5)  # Half the evidence, same statistics.
  assert merged.observation_count.numpy() == 10
  np.testing.assert_allclose(merged.get_mean_std()[0], mean)
  np.testing.assert_allclose(merged.get_mean_std()[1], std, rtol=1e-6)
  merged.reset(0.)
  assert merged.observation_count.numpy() == 10
  merged.reset()
  assert [float(np.max(np.abs(s))) for s in _stats(merged)] == [0.] * 4
  np.testing.assert_allclose(merged.get_mean_std()[1], np.ones(10))
  with pytest.raises(ValueError, match='size 10'):
    merged.merge(_initialized(rs.AverageMeanStd, 3))


@pytest.mark.timeout(120)
@pytest.mark.parametrize('num_updates', [3, 9, 10, 11, 19, 20, 21, 25])
def test_two_level_flushes_the_buffer(num_updates):
  tracker = _initialized(lambda: rs.TwoLevelAverageMeanStd(buffer_size=10))
  rng = np.random.default_rng(num_updates)
  batches = [rng.normal(-2., 5., size=(10, 10)).astype(np.float32)
             for _ in range(num_updates)]
  update = tf.function(tracker.update)
  for batch in batches:
    update(batch)
  flushes, in_buffer = divmod(num_updates, 10)
  assert tracker.buffer.update_count.numpy() == in_buffer
  assert tracker.buffer.observation_count.numpy() == 10 * in_buffer
  assert tracker.accumulator.update_count.numpy() == flushes
  assert tracker.accumulator.observation_count.numpy() == 100 * flushes
  data = np.concatenate(batches)
  mean, std = tracker.get_mean_std()
  np.testing.assert_allclose(mean, data.mean(0), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(std, data.std(0), rtol=1e-5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', sorted(TRACKERS))
def test_misuse_raises(name):
  tracker = TRACKERS[name][0]()
  with pytest.raises(ValueError, match='init'):
    tracker.update(_data())
  with pytest.raises(ValueError, match='init'):
    tracker.get_mean_std()
  tracker.init(10)
  with pytest.raises(ValueError, match='size 10, not 5'):
    tracker.init(5)
  with pytest.raises(ValueError, match='shape'):
    tracker.update(tf.zeros([4, 3]))


@pytest.mark.timeout(60)
def test_gin_configurables():
  try:
    gin.parse_config([
        'EMAMeanStd.beta = 0.25',
        'AverageMeanStd.std_min_value = 0.5',
        'TwoLevelAverageMeanStd.buffer_size = 3',
        'FixedMeanStd.std = 4.',
    ])
    assert rs.EMAMeanStd()._beta == .25
    assert rs.AverageMeanStd()._std_min_value == .5
    assert rs.TwoLevelAverageMeanStd().buffer_size == 3
    fixed = _initialized(rs.FixedMeanStd, 2)
    np.testing.assert_allclose(fixed.get_mean_std()[1], [4., 4.])
  finally:
    gin.clear_config()


_MULTI_REPLICA_BODY = r'''
from seed_rl.common.training import running_statistics as rs

rng = np.random.default_rng(0)
# Three updates; the replicas get different numbers of rows.
batches = [[rng.normal(5., 3., size=(n, 3)).astype(np.float32) for n in ns]
           for ns in ((4, 6), (2, 7), (5, 5))]
data = np.concatenate([np.concatenate(b) for b in batches])
ema_first, ema_second = np.zeros(3), np.ones(3)
for b in batches:
  b = np.concatenate(b).astype(np.float64)
  ema_first += .5 * (b.mean(0) - ema_first)
  ema_second += .5 * ((b ** 2).mean(0) - ema_second)
expected = {
    'ema': (ema_first, np.sqrt(ema_second - ema_first ** 2)),
    'average': (data.mean(0), data.std(0)),
    'two_level': (data.mean(0), data.std(0)),
    'fixed': (np.zeros(3), np.ones(3)),
}
factories = {
    'ema': lambda: rs.EMAMeanStd(beta=.5),
    'average': rs.AverageMeanStd,
    'two_level': lambda: rs.TwoLevelAverageMeanStd(buffer_size=2),
    'fixed': rs.FixedMeanStd,
}


def error(tracker, name, stats):
  return max(float(np.max(np.abs(np.asarray(got) - want)))
             for got, want in zip(stats, expected[name]))


results = {}
for name, factory in factories.items():
  tracker, crossed = factory(), factory()
  with strategy.scope():
    tracker.init(3)
    crossed.init(3)
  for batch in batches:
    on_replicas(tracker.update, batch)
    with strategy.scope():  # Cross-replica context: the whole batch.
      crossed.update(np.concatenate(batch))
  per_replica = on_replicas(lambda _: tracker.get_mean_std(), [0., 0.])
  results[name] = {
      'replica_errors': [error(tracker, name, s) for s in per_replica],
      'cross_replica_error': error(crossed, name, crossed.get_mean_std()),
      'copies_differ': replica_copies_differ(tracker),
  }
  if name == 'two_level':
    results[name]['counts'] = [
        float(tracker.accumulator.observation_count.numpy()),
        float(tracker.buffer.observation_count.numpy())]
print('RESULT ' + json.dumps(results))
'''


@pytest.mark.timeout(180)
def test_statistics_aggregate_over_two_replicas():
  results = run_two_replica_script(_MULTI_REPLICA_BODY)
  assert sorted(results) == sorted(TRACKERS)
  for name, result in results.items():
    assert max(result['replica_errors']) < 1e-4, (name, result)
    assert result['cross_replica_error'] < 1e-4, (name, result)
    assert result['copies_differ'] == 0., (name, result)
  # buffer_size 2: the first two updates (19 rows) were flushed.
  assert results['two_level']['counts'] == [19., 10.]


# One new MirroredStrategy per tracker, in one process, as a program that
# builds several learners (or a test module) does. Each strategy numbers its
# collective ops from the same keys, so reductions of different shapes in two
# strategies must not go through collectives.
_STRATEGY_PER_TRACKER_BODY = r'''
from seed_rl.common.training import running_statistics as rs

data = np.arange(200, dtype=np.float32).reshape(20, 10)
halves = np.split(data, 2)
factories = [
    ('ema', lambda: rs.EMAMeanStd(beta=.5)),
    ('average', rs.AverageMeanStd),
    ('two_level', lambda: rs.TwoLevelAverageMeanStd(buffer_size=1)),
    ('ema_eager', lambda: rs.EMAMeanStd(beta=.5)),
    ('average_eager', rs.AverageMeanStd),
]
results = {}
for name, factory in factories:
  strategy = test_utils.create_distribution_strategy(use_tpu=False)
  tracker = factory()
  with strategy.scope():
    tracker.init(10)
  update = tracker.update if name.endswith('_eager') else tf.function(
      tracker.update)
  for half in halves:
    # The whole half, split over the two replicas by the dataset.
    values = next(iter(strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensors(half))))
    strategy.run(update, (values,))
  if name.startswith('ema'):
    results[name] = [tracker.first_moment.numpy().tolist(),
                     tracker.second_moment.numpy().tolist()]
  else:
    results[name] = [t.numpy().tolist() for t in tracker.get_mean_std()]
  results[name].append(replica_copies_differ(tracker))
print('RESULT ' + json.dumps(results))
'''


@pytest.mark.timeout(180)
def test_trackers_update_under_a_new_strategy_each():
  results = run_two_replica_script(_STRATEGY_PER_TRACKER_BODY)
  data = np.arange(200, dtype=np.float64).reshape(20, 10)
  first, second = np.zeros(10), np.ones(10)
  for half in np.split(data, 2):  # beta .5, by hand.
    first += .5 * (half.mean(0) - first)
    second += .5 * ((half ** 2).mean(0) - second)
  expected = {'ema': (first, second), 'average': (data.mean(0), data.std(0))}
  expected['ema_eager'] = expected['ema']
  expected['two_level'] = expected['average_eager'] = expected['average']
  assert sorted(results) == sorted(expected)
  for name, (mean_or_first, std_or_second, copies_differ) in results.items():
    np.testing.assert_allclose(mean_or_first, expected[name][0], rtol=1e-5,
                               err_msg=name)
    np.testing.assert_allclose(std_or_second, expected[name][1], rtol=1e-5,
                               err_msg=name)
    assert copies_differ == 0., name
