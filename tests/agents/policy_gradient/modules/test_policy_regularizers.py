"""KL policy regularizer: each term against numpy, its coefficients, logs and gradients."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import constraints
from seed_rl.agents.policy_gradient.modules import generalized_onpolicy_loss as gol
from seed_rl.agents.policy_gradient.modules import logging_module
from seed_rl.agents.policy_gradient.modules import policy_regularizers
from seed_rl.common import parametric_distribution

pytestmark = pytest.mark.timeout(120)

T, B, A = 4, 3, 5


def _logits(seed):
  rng = np.random.RandomState(seed)
  return rng.randn(T, B, A).astype(np.float32), rng.randn(T, B, A).astype(np.float32)


def _probs(logits):
  e = np.exp(logits - logits.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _kl(p, q):
  return np.sum(p * (np.log(p) - np.log(q)), -1)


def _terms(target, behaviour):
  pi, mu, uniform = _probs(target), _probs(behaviour), np.full([T, B, A], 1. / A)
  return {'kl_pi_mu': _kl(pi, mu), 'kl_mu_pi': _kl(mu, pi),
          'entropy': np.sum(pi * np.log(pi), -1), 'kl_ref_pi': _kl(uniform, pi)}


def test_terms_losses_and_logs():
  target, behaviour = _logits(0)
  coefficients = {'kl_pi_mu': 0.5, 'kl_mu_pi': 2., 'entropy': 0.1, 'kl_ref_pi': 3.}
  regularizer = policy_regularizers.KLPolicyRegularizer(**coefficients)
  dist = parametric_distribution.categorical_distribution(A, tf.int32)

  @tf.function
  def run():
    with logging_module.LoggingTape(regularizer) as logs:
      losses = regularizer(dist, target, behaviour, tf.zeros([T, B], tf.int32))
    return losses, dict(logs)

  (per_step, global_loss), logs = run()
  expected = _terms(target, behaviour)
  assert per_step.shape == [T, B]
  np.testing.assert_allclose(per_step, sum(c * expected[k] for k, c in coefficients.items()),
                             rtol=1e-5, atol=1e-5)
  assert float(global_loss) == 0.
  assert len(logs) == 8
  for key, coefficient in coefficients.items():
    np.testing.assert_allclose(logs[f'KLPolicyRegularizer/{key}'], expected[key].mean(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logs[f'KLPolicyRegularizer/{key}_coefficient'], coefficient,
                               rtol=1e-6)


def test_lagrange_coefficient_and_gradients():
  target, behaviour = _logits(1)
  alpha = constraints.LagrangeInequalityCoefficient(threshold=0.05, init_alpha=3.,
                                                    init_variables=False)
  regularizer = policy_regularizers.KLPolicyRegularizer(kl_mu_pi=alpha, entropy=None)
  assert list(regularizer.coefficients) == ['kl_mu_pi']
  regularizer.init()
  assert len(regularizer.trainable_variables) == 1
  dist = parametric_distribution.categorical_distribution(A, tf.int32)
  target_var, behaviour_var = tf.Variable(target), tf.Variable(behaviour)
  with tf.GradientTape(persistent=True) as tape:
    per_step, global_loss = regularizer(dist, target_var, behaviour_var)
  kl = _terms(target, behaviour)['kl_mu_pi']
  np.testing.assert_allclose(per_step, 3. * kl, rtol=1e-5)
  np.testing.assert_allclose(global_loss, 3. * (0.05 - kl.mean()), rtol=1e-5)
  assert tape.gradient(per_step, behaviour_var) is None
  assert tape.gradient(per_step, target_var) is not None
  assert tape.gradient(per_step, regularizer.trainable_variables[0]) is None
  np.testing.assert_allclose(tape.gradient(global_loss, regularizer.trainable_variables[0]),
                             3. * (0.05 - kl.mean()), rtol=1e-5)


def test_continuous_actions():
  dist = parametric_distribution.normal_tanh_distribution(2)
  target = np.random.RandomState(2).randn(T, B, dist.param_size).astype(np.float32)
  regularizer = policy_regularizers.KLPolicyRegularizer(kl_ref_pi=1., kl_pi_mu=1., entropy=1.)
  per_step, _ = regularizer(dist, target, target)
  assert per_step.shape == [T, B] and np.isfinite(per_step).all()
  zeros = np.zeros_like(target)
  ref_only = policy_regularizers.KLPolicyRegularizer(kl_ref_pi=1., kl_pi_mu=1.)
  np.testing.assert_allclose(ref_only(dist, zeros, zeros)[0], np.zeros([T, B]), atol=1e-6)


def test_unknown_terms_are_refused():
  with pytest.raises(ValueError, match='kl_typo'):
    policy_regularizers.KLPolicyRegularizer(kl_typo=1.)


def test_regularizers_are_regularization_losses():
  """Each regularizer class of the module is a `RegularizationLoss`, the loss's base class."""
  classes = [c for c in vars(policy_regularizers).values()
             if isinstance(c, type) and c.__module__ == policy_regularizers.__name__]
  assert classes
  for cls in classes:
    assert issubclass(cls, gol.RegularizationLoss), cls
  assert isinstance(policy_regularizers.KLPolicyRegularizer(entropy=1.),
                    logging_module.LoggingModule)
