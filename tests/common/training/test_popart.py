"""Tests of seed_rl.common.training.popart."""

import inspect

import gin
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.training import logging_module
from seed_rl.common.training import popart
from seed_rl.common.training import running_statistics as rs
from tests.common.training.test_running_statistics import run_two_replica_script

TRACKERS = {
    'ema': lambda: rs.EMAMeanStd(.5),
    'average': rs.AverageMeanStd,
    'two_level': lambda: rs.TwoLevelAverageMeanStd(buffer_size=1),
}


def _popart(tracker_factory=lambda: rs.EMAMeanStd(.5), compensate=True):
  normalizer = popart.PopArt(tracker_factory(), compensate=compensate)
  normalizer.init()
  return normalizer


def _targets():
  return tf.range(20, dtype=tf.float32)


def _values(normalizer, predictions):
  """The values that network outputs `predictions` stand for."""
  return normalizer.unnormalize_prediction(
      normalizer.correct_prediction(predictions))


@pytest.mark.timeout(60)
def test_normalization():
  normalizer = _popart(lambda: rs.EMAMeanStd(1.))
  tf.function(normalizer.update_normalization_statistics)(_targets())
  normalized = normalizer.normalize_target(_targets()).numpy()
  np.testing.assert_allclose(normalized.mean(), 0., atol=1e-6)
  np.testing.assert_allclose(normalized.std(), 1., atol=1e-6)


@pytest.mark.timeout(60)
def test_variables():
  normalizer = _popart()
  assert len(normalizer.variables) == 4
  assert len(normalizer.trainable_variables) == 2
  normalizer.init()  # A second init creates nothing.
  assert len(normalizer.variables) == 4
  assert len(_popart(rs.AverageMeanStd).variables) == 6
  uncompensated = _popart(compensate=False)
  assert len(uncompensated.variables) == 2
  assert not uncompensated.trainable_variables
  # A loss initializes its submodules through zero-argument init() calls.
  assert not inspect.signature(normalizer.init).parameters


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', sorted(TRACKERS))
def test_invariance(name):
  normalizer = _popart(TRACKERS[name])
  # As if training had moved the compensation away from the identity.
  normalizer.compensation_std.assign(1.5)
  normalizer.compensation_mean.assign(-.3)
  predictions = tf.linspace(-3., 3., 13)
  before = _values(normalizer, predictions)
  update = tf.function(normalizer.update_normalization_statistics)
  for targets in (_targets(), 100. + 7. * _targets()):
    update(targets)
    np.testing.assert_allclose(_values(normalizer, predictions), before,
                               rtol=1e-5, atol=1e-4)
  # The statistics did change.
  assert abs(float(normalizer.mean_std_tracker.get_mean_std()[0][0])) > 1.


@pytest.mark.timeout(60)
def test_invertible():
  normalizer = _popart()
  normalizer.update_normalization_statistics(_targets())
  np.testing.assert_allclose(
      normalizer.unnormalize_prediction(
          normalizer.normalize_target(_targets())), _targets(), atol=1e-5)


@pytest.mark.timeout(60)
def test_advantage_scaling():
  normalizer = _popart()
  normalizer.update_normalization_statistics(_targets())
  targets = _targets()
  advantages = targets - tf.reverse(targets, [0])
  normalized_targets = normalizer.normalize_target(targets)
  np.testing.assert_allclose(
      normalizer.normalize_advantage(advantages),
      normalized_targets - tf.reverse(normalized_targets, [0]), atol=1e-5)
  np.testing.assert_allclose(normalizer.normalize_advantages(advantages),
                             normalizer.normalize_advantage(advantages))
  np.testing.assert_allclose(normalizer.normalize_targets(targets),
                             normalized_targets)


@pytest.mark.timeout(60)
def test_without_compensation_predictions_follow_the_statistics():
  normalizer = _popart(compensate=False)
  predictions = tf.constant([[-1., 0.], [1., 2.]])
  assert normalizer.correct_prediction(predictions) is predictions
  normalizer.update_normalization_statistics(_targets())
  mean, std = normalizer.mean_std_tracker.get_mean_std()
  np.testing.assert_allclose(_values(normalizer, predictions),
                             predictions * std[0] + mean[0])


@pytest.mark.timeout(60)
def test_logs_statistics():
  normalizer = _popart(lambda: rs.EMAMeanStd(1.))
  with logging_module.LoggingTape(normalizer) as logs:
    normalizer.update_normalization_statistics(_targets())
  assert list(logs) == ['PopArt/mean', 'PopArt/std']
  assert logs['PopArt/mean'].shape == ()
  np.testing.assert_allclose(logs['PopArt/mean'], 9.5)
  np.testing.assert_allclose(logs['PopArt/std'], np.std(np.arange(20.)),
                             rtol=1e-6)


@pytest.mark.timeout(60)
def test_compensation_is_trained():
  normalizer = _popart()
  optimizer = tf.keras.optimizers.SGD(learning_rate=.1)
  targets = tf.fill([8], 2.)
  with tf.GradientTape() as tape:
    predictions = normalizer.correct_prediction(tf.ones([8]))
    loss = tf.reduce_mean(tf.square(normalizer.normalize_target(targets) -
                                    predictions))
  variables = normalizer.trainable_variables
  optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
  # d loss / d b = -2 (2 - 1) = -2; a gets the same gradient (x = 1).
  np.testing.assert_allclose(normalizer.compensation_mean, .2)
  np.testing.assert_allclose(normalizer.compensation_std, 1.2)


@pytest.mark.timeout(60)
def test_misuse_raises():
  with pytest.raises(ValueError, match='MeanStd'):
    popart.PopArt(object())
  normalizer = popart.PopArt(rs.EMAMeanStd())
  with pytest.raises(ValueError, match='init'):
    normalizer.normalize_target(_targets())
  with pytest.raises(ValueError, match='init'):
    normalizer.update_normalization_statistics(_targets())


@pytest.mark.timeout(60)
def test_gin_configurable():
  try:
    gin.parse_config([
        'PopArt.mean_std_tracker = @AverageMeanStd()',
        'PopArt.compensate = False',
    ])
    normalizer = popart.PopArt()
  finally:
    gin.clear_config()
  assert isinstance(normalizer.mean_std_tracker, rs.AverageMeanStd)
  assert not normalizer.compensate


_MULTI_REPLICA_BODY = r'''
from seed_rl.common.training import logging_module
from seed_rl.common.training import popart
from seed_rl.common.training import running_statistics as rs

rng = np.random.default_rng(0)
# Value targets [T, B]: the replicas get different batch sizes.
parts = [rng.normal(10., 4., size=(5, b)).astype(np.float32) for b in (3, 5)]
targets = np.concatenate([p.ravel() for p in parts])
predictions = np.linspace(-3., 3., 7).astype(np.float32)
expected = {
    'ema': (.5 * targets.mean(),
            np.sqrt(.5 + .5 * (targets ** 2).mean()
                    - (.5 * targets.mean()) ** 2)),
    'average': (targets.mean(), targets.std()),
}
results = {}
for name, tracker in (('ema', rs.EMAMeanStd(.5)),
                      ('average', rs.AverageMeanStd())):
  normalizer = popart.PopArt(tracker)
  with strategy.scope():
    normalizer.init()
    normalizer.compensation_std.assign(1.5)
    normalizer.compensation_mean.assign(-.3)

  def values(_):
    return normalizer.unnormalize_prediction(
        normalizer.correct_prediction(tf.constant(predictions)))

  def update(part):
    with logging_module.LoggingTape(normalizer) as logs:
      normalizer.update_normalization_statistics(part)
    return logs

  before = on_replicas(values, [0., 0.])
  logs = on_replicas(update, parts)
  after = on_replicas(values, [0., 0.])
  mean, std = expected[name]
  results[name] = {
      'invariance_error': max(float(np.max(np.abs(a - before[0])))
                              for a in before + after),
      'logged_error': max(float(max(abs(l['PopArt/mean'] - mean),
                                    abs(l['PopArt/std'] - std)))
                          for l in logs),
      'copies_differ': replica_copies_differ(normalizer),
  }
print('RESULT ' + json.dumps(results))
'''


@pytest.mark.timeout(180)
def test_two_replicas_agree_and_keep_predictions():
  results = run_two_replica_script(_MULTI_REPLICA_BODY)
  assert sorted(results) == ['average', 'ema']
  for name, result in results.items():
    assert result['invariance_error'] < 1e-4, (name, result)
    assert result['logged_error'] < 1e-4, (name, result)
    assert result['copies_differ'] == 0., (name, result)
