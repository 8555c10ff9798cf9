"""Tests for seed_rl.agents.policy_gradient.modules.input_normalization."""

import gin
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.agents.policy_gradient.modules import running_statistics as rs
from tests.common.training.test_running_statistics import (
    run_two_replica_script)

TRACKERS = {
    'ema': lambda: rs.EMAMeanStd(.5),
    'average': rs.AverageMeanStd,
    'two_level': lambda: rs.TwoLevelAverageMeanStd(buffer_size=1),
    'fixed': rs.FixedMeanStd,
}


def _normalizer(tracker_factory=lambda: rs.EMAMeanStd(.5), size=10):
  normalizer = input_normalization.InputNormalization(tracker_factory())
  normalizer.init_normalization_stats(size)
  return normalizer


def _inputs():
  return tf.reshape(tf.range(200, dtype=tf.float32), (20, 10))


def _model_inputs(normalizer, x):
  return normalizer.correct(normalizer.normalize(x))


@pytest.mark.timeout(60)
def test_normalization():
  normalizer = _normalizer(lambda: rs.EMAMeanStd(1.))
  tf.function(normalizer.update_normalization_statistics)(_inputs())
  normalized = normalizer.normalize(_inputs()).numpy()
  np.testing.assert_allclose(normalized.mean(0), 0., atol=1e-5)
  np.testing.assert_allclose(normalized.std(0), 1., atol=1e-5)
  mean, std = normalizer.get_mean_std()
  np.testing.assert_allclose(mean, _inputs().numpy().mean(0))
  np.testing.assert_allclose(std, _inputs().numpy().std(0), rtol=1e-6)


@pytest.mark.timeout(60)
def test_variables():
  normalizer = _normalizer()
  assert len(normalizer.variables) == 4
  assert len(normalizer.trainable_variables) == 2
  normalizer.init_normalization_stats(10)  # Same size: nothing new.
  assert len(normalizer.variables) == 4
  assert len(_normalizer(rs.FixedMeanStd).variables) == 2
  with pytest.raises(ValueError, match='size 10, not 3'):
    normalizer.init_normalization_stats(3)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', sorted(TRACKERS))
def test_invariance(name):
  normalizer = _normalizer(TRACKERS[name])
  # As if training had moved the correction away from the identity.
  normalizer.compensation_std.assign(tf.linspace(.5, 2., 10))
  normalizer.compensation_mean.assign(tf.linspace(-1., 1., 10))
  probes = tf.random.stateless_normal([7, 10], seed=[1, 2], stddev=50.)
  before = _model_inputs(normalizer, probes)
  update = tf.function(normalizer.update_normalization_statistics)
  for inputs in (_inputs(), 3. * _inputs() - 100.):
    update(inputs)
    np.testing.assert_allclose(_model_inputs(normalizer, probes), before,
                               rtol=1e-5, atol=1e-4)


@pytest.mark.timeout(60)
def test_correction_is_trained():
  normalizer = _normalizer()
  optimizer = tf.keras.optimizers.SGD(learning_rate=.1)
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(_model_inputs(normalizer, tf.ones([1, 10])))
  variables = normalizer.trainable_variables
  optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
  np.testing.assert_allclose(normalizer.compensation_mean, np.full(10, -.1))
  np.testing.assert_allclose(normalizer.compensation_std, np.full(10, .9))


@pytest.mark.timeout(60)
def test_misuse_raises():
  with pytest.raises(ValueError, match='MeanStd'):
    input_normalization.InputNormalization('not a tracker')
  normalizer = input_normalization.InputNormalization(rs.AverageMeanStd())
  assert not normalizer.initialized
  with pytest.raises(ValueError, match='init_normalization_stats'):
    normalizer.normalize(_inputs())
  with pytest.raises(ValueError, match='init_normalization_stats'):
    normalizer.update_normalization_statistics(_inputs())


@pytest.mark.timeout(60)
def test_gin_configurable():
  try:
    gin.parse_config(
        ['InputNormalization.mean_std_tracker = @AverageMeanStd()'])
    normalizer = input_normalization.InputNormalization()
  finally:
    gin.clear_config()
  assert isinstance(normalizer.mean_std_tracker, rs.AverageMeanStd)


_MULTI_REPLICA_BODY = r'''
from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.agents.policy_gradient.modules import running_statistics as rs

rng = np.random.default_rng(0)
# Observations [T, B, 4]: the replicas get different batch sizes.
parts = [rng.normal(-20., 6., size=(3, b, 4)).astype(np.float32)
         for b in (2, 5)]
inputs = np.concatenate([p.reshape(-1, 4) for p in parts])
probes = rng.normal(0., 30., size=(6, 4)).astype(np.float32)
normalizer = input_normalization.InputNormalization(rs.AverageMeanStd())
with strategy.scope():
  normalizer.init_normalization_stats(4)
  normalizer.compensation_std.assign([.5, 1., 1.5, 2.])
  normalizer.compensation_mean.assign([-1., 0., 1., 2.])


def model_inputs(_):
  return normalizer.correct(normalizer.normalize(tf.constant(probes)))


before = on_replicas(model_inputs, [0., 0.])
on_replicas(normalizer.update_normalization_statistics, parts)
after = on_replicas(model_inputs, [0., 0.])
stats = on_replicas(lambda _: normalizer.get_mean_std(), [0., 0.])
print('RESULT ' + json.dumps({
    'invariance_error': max(float(np.max(np.abs(a - before[0])))
                            for a in before + after),
    'stats_error': max(float(np.max(np.abs(np.asarray(s) - w)))
                       for mean_std in stats
                       for s, w in zip(mean_std, (inputs.mean(0),
                                                  inputs.std(0)))),
    'copies_differ': replica_copies_differ(normalizer),
}))
'''


@pytest.mark.timeout(180)
def test_two_replicas_agree_and_keep_model_inputs():
  result = run_two_replica_script(_MULTI_REPLICA_BODY)
  assert result['invariance_error'] < 1e-4, result
  assert result['stats_error'] < 1e-4, result
  assert result['copies_differ'] == 0., result
