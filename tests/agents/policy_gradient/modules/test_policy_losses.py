"""Policy losses: advantage preprocessing, and gradients against the formulas of each method."""

import gin
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import advantages as advantages_lib
from seed_rl.agents.policy_gradient.modules import constraints
from seed_rl.agents.policy_gradient.modules import logging_module
from seed_rl.agents.policy_gradient.modules import policy_losses
from seed_rl.agents.policy_gradient.modules import policy_regularizers
from seed_rl.common import parametric_distribution
from tests.agents.policy_gradient.modules.onpolicy_helpers import log_prob, log_softmax

pytestmark = pytest.mark.timeout(120)

T, B, A = 5, 4, 3
N = T * B


def _batch(seed, advantage_range=(-3., 3.)):
  """Learner logits, behaviour logits, actions and advantages of a categorical policy."""
  rng = np.random.RandomState(seed)
  logits = rng.randn(T, B, A).astype(np.float32)
  behaviour_logits = (logits + rng.uniform(-1., 1., [T, B, A])).astype(np.float32)
  actions = rng.randint(A, size=[T, B]).astype(np.int32)
  advantages = rng.uniform(*advantage_range, size=[T, B]).astype(np.float32)
  return logits, behaviour_logits, actions, advantages


def _loss_gradient(loss_fn, logits, behaviour_logits, actions, advantages):
  """Gradient of the mean per-step loss with respect to the learner's logits."""
  dist = parametric_distribution.categorical_distribution(A, tf.int32)
  logits = tf.Variable(logits)
  with tf.GradientTape() as tape:
    loss = tf.reduce_mean(loss_fn(advantages, dist.log_prob(logits, actions),
                                  dist.log_prob(behaviour_logits, actions)))
  return tape.gradient(loss, logits).numpy()


def _weighted_log_prob_gradient(weights, logits, actions):
  """d/dlogits of mean(-w log pi(a)) for a categorical: -w (onehot(a) - softmax) / N."""
  grad_log_prob = np.eye(A)[actions] - np.exp(log_softmax(logits))
  return -weights[..., None] * grad_log_prob / N


def _rhos(logits, behaviour_logits, actions):
  return np.exp(log_prob(logits, actions) - log_prob(behaviour_logits, actions))


def test_normalize():
  adv = np.random.RandomState(0).randn(T, B).astype(np.float32) * 5. + 3.
  out, mask = policy_losses.AdvantagePreprocessor(normalize=True)(adv)
  np.testing.assert_allclose(out, (adv - adv.mean()) / adv.std(), atol=1e-5)
  np.testing.assert_array_equal(mask, np.ones([T, B]))


def test_only_positive_with_offset():
  adv = np.array([[-2., -0.5], [0.5, 3.]], np.float32)
  out, mask = policy_losses.AdvantagePreprocessor(only_positive=True)(adv)
  np.testing.assert_array_equal(mask, [[0., 0.], [1., 1.]])
  np.testing.assert_array_equal(out, [[0., 0.], [0.5, 3.]])
  out, mask = policy_losses.AdvantagePreprocessor(only_positive=True, offset=1.)(adv)
  np.testing.assert_array_equal(mask, [[0., 1.], [1., 1.]])
  np.testing.assert_array_equal(out, [[0., 0.5], [1.5, 4.]])


@pytest.mark.parametrize('n', [20, 7, 1])
def test_only_top_half(n):
  adv = np.random.RandomState(n).permutation(n).astype(np.float32).reshape([n, 1])
  out, mask = policy_losses.AdvantagePreprocessor(only_top_half=True)(adv)
  kept = adv >= n - (n + 1) // 2  # The ceil(n/2) largest of 0 .. n-1.
  np.testing.assert_array_equal(mask, kept.astype(np.float32))
  np.testing.assert_array_equal(out, np.where(kept, adv, 0.))


def test_normalize_then_top_half():
  adv = np.random.RandomState(1).randn(T, B).astype(np.float32)
  out, mask = policy_losses.AdvantagePreprocessor(normalize=True, only_top_half=True)(adv)
  normalized = (adv - adv.mean()) / adv.std()
  kept = normalized >= np.sort(normalized.ravel())[::-1][N // 2 - 1]
  assert mask.numpy().sum() == N // 2
  np.testing.assert_array_equal(mask, kept.astype(np.float32))
  np.testing.assert_allclose(out, np.where(kept, normalized, 0.), atol=1e-5)


def test_pg_gradient():
  logits, behaviour_logits, actions, adv = _batch(2)
  grad = _loss_gradient(policy_losses.pg(), logits, behaviour_logits, actions, adv)
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(adv, logits, actions), atol=1e-6)


def test_vtrace_gradient():
  logits, behaviour_logits, actions, adv = _batch(3)
  grad = _loss_gradient(policy_losses.vtrace(), logits, behaviour_logits, actions, adv)
  weights = np.minimum(_rhos(logits, behaviour_logits, actions), 1.) * adv
  assert (_rhos(logits, behaviour_logits, actions) > 1.).any()
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(weights, logits, actions),
                             atol=1e-6)


def test_ppo_gradient_is_that_of_the_clipped_surrogate():
  logits, behaviour_logits, actions, adv = _batch(4)
  behaviour_logits = logits + 2. * (behaviour_logits - logits)  # Rhos far enough to clip.
  grad = _loss_gradient(policy_losses.ppo(0.2), logits, behaviour_logits, actions, adv)
  rhos = _rhos(logits, behaviour_logits, actions)
  # Surrogate min(rho A, clip(rho, 1/1.2, 1.2) A): where the unclipped term is the minimum its
  # gradient is rho A grad log pi, elsewhere the clipped (constant) term has none.
  unclipped = rhos * adv <= np.clip(rhos, 1. / 1.2, 1.2) * adv
  assert 0 < unclipped.sum() < N
  weights = np.where(unclipped, rhos * adv, 0.)
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(weights, logits, actions),
                             atol=1e-6)


def test_ppo_normalizes_advantages():
  logits, behaviour_logits, actions, adv = _batch(5)
  loss = policy_losses.ppo(0.2, normalize_advantages=True)
  grad = _loss_gradient(loss, logits, behaviour_logits, actions, adv * 10. + 4.)
  reference = _loss_gradient(policy_losses.ppo(0.2), logits, behaviour_logits, actions,
                             (adv - adv.mean()) / adv.std())
  np.testing.assert_allclose(grad, reference, atol=1e-6)


def test_awr_gradient():
  logits, behaviour_logits, actions, adv = _batch(6, advantage_range=(-10., 20.))
  grad = _loss_gradient(policy_losses.awr(beta=5., w_max=20.), logits, behaviour_logits,
                        actions, adv)
  weights = np.minimum(np.exp(adv / 5.), 20.)
  assert (weights == 20.).any()
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(weights, logits, actions),
                             rtol=1e-5, atol=1e-6)


def test_behaviour_cloning_gradients():
  logits, behaviour_logits, actions, adv = _batch(7)
  grad = _loss_gradient(policy_losses.bc_logp(), logits, behaviour_logits, actions, adv)
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(np.ones([T, B]), logits, actions),
                             atol=1e-6)
  grad = _loss_gradient(policy_losses.repeat_positive_advantages(), logits, behaviour_logits,
                        actions, adv)
  weights = (adv > 0.).astype(np.float32)
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(weights, logits, actions),
                             atol=1e-6)


_ORIGINAL_LOSSES = {
    'pg': (policy_losses.pg, lambda adv, rhos: adv),
    'vtrace': (policy_losses.vtrace, lambda adv, rhos: np.minimum(rhos, 1.) * adv),
    # PPO's clipped surrogate weighs the unclipped steps by rho and drops the others.
    'ppo': (lambda: policy_losses.ppo(epsilon=0.2),
            lambda adv, rhos: np.where(rhos * adv <= np.clip(rhos, 1 / 1.2, 1.2) * adv,
                                       rhos * adv, 0.)),
    'awr': (lambda: policy_losses.awr(beta=5., w_max=1e9), lambda adv, rhos: np.exp(adv / 5.)),
}


@pytest.mark.parametrize('name', sorted(_ORIGINAL_LOSSES))
def test_losses_take_all_the_arguments_and_return_the_mean_loss(name):
  """Called with every argument of the policy losses' convention, positionally, a loss is the
  mean of -log pi * w over the steps, with the gradient of that mean."""
  create_loss, reference_weights = _ORIGINAL_LOSSES[name]
  logits, behaviour_logits, actions, adv = _batch(10)
  behaviour_logits = logits + 2. * (behaviour_logits - logits)  # Rhos far enough to clip.
  target_logp = log_prob(logits, actions)
  behaviour_logp = log_prob(behaviour_logits, actions)
  weights = reference_weights(adv, np.exp(target_logp - behaviour_logp))
  dist = parametric_distribution.categorical_distribution(A, tf.int32)
  target_logp = tf.constant(target_logp)
  with tf.GradientTape() as tape:
    tape.watch(target_logp)
    loss = create_loss()(adv, target_logp, behaviour_logp, actions, logits, behaviour_logits,
                         dist)
  assert loss.shape == []
  np.testing.assert_allclose(loss, np.mean(-target_logp.numpy() * weights), rtol=1e-5)
  np.testing.assert_allclose(tape.gradient(loss, target_logp), -weights / N, rtol=1e-5,
                             atol=1e-7)


def test_vmpo_gradients_and_temperature():
  logits, behaviour_logits, actions, adv = _batch(8)
  loss_fn = policy_losses.vmpo(e_n=0.1)
  loss_fn.init()
  (param,) = loss_fn.trainable_variables
  param.assign(np.log(2.))  # eta = 2.
  grad = _loss_gradient(loss_fn, logits, behaviour_logits, actions, adv)
  kept = adv >= np.sort(adv.ravel())[::-1][N // 2 - 1]
  psi = np.where(kept, np.exp(adv / 2.), 0.)
  psi /= psi.sum()
  # V-MPO's -sum psi log pi over the top half (the mean over steps of N psi log pi).
  np.testing.assert_allclose(grad, _weighted_log_prob_gradient(N * psi, logits, actions),
                             rtol=1e-5, atol=1e-6)
  # The temperature minimizes eta (e_n - KL(psi || uniform over the top half)).
  kl = np.sum(psi[kept] * np.log(psi[kept] * kept.sum()))
  with tf.GradientTape() as tape:
    total = tf.reduce_mean(loss_fn(adv, log_prob(logits, actions), log_prob(logits, actions)))
  np.testing.assert_allclose(tape.gradient(total, param), 2. * (0.1 - kl), rtol=1e-4)


def test_losses_log_and_run_in_graphs():
  logits, behaviour_logits, actions, adv = _batch(9)
  loss_fn = policy_losses.ppo(0.2, normalize_advantages=True)
  target_logp, behaviour_logp = log_prob(logits, actions), log_prob(behaviour_logits, actions)

  @tf.function
  def run():
    with logging_module.LoggingTape(loss_fn) as logs:
      loss = loss_fn(adv, target_logp, behaviour_logp)
    return loss, dict(logs)

  loss, logs = run()
  assert loss.shape == []
  for key in ('advantages', 'log_rho', 'ppo_clipped_fraction', 'importance_weights', 'weights',
              'loss'):
    assert logs[f'GeneralizedAdvantagePolicyLoss/{key}'].shape == []
  assert float(logs['AdvantagePreprocessor/kept_fraction']) == 1.
  np.testing.assert_allclose(logs['GeneralizedAdvantagePolicyLoss/advantages'], adv.mean(),
                             rtol=1e-5)
  np.testing.assert_allclose(logs['GeneralizedAdvantagePolicyLoss/loss'], loss, rtol=1e-5)


def test_bad_arguments_are_refused():
  with pytest.raises(ValueError, match='use_importance_weights'):
    policy_losses.GeneralizedAdvantagePolicyLoss(max_importance_weight=2.)
  with pytest.raises(ValueError, match='ppo_epsilon'):
    policy_losses.GeneralizedAdvantagePolicyLoss(ppo_epsilon=0.)


@gin.configurable('policy_gradient_modules_test_consumer')
def _consumer(policy_loss, regularizer, advantage_estimator):
  return policy_loss, regularizer, advantage_estimator


def test_the_modules_bind_with_gin():
  config = """
      policy_gradient_modules_test_consumer.policy_loss = @ppo()
      policy_gradient_modules_test_consumer.regularizer = @KLPolicyRegularizer()
      policy_gradient_modules_test_consumer.advantage_estimator = @GAE()
      ppo.epsilon = 0.3
      ppo.normalize_advantages = True
      GAE.lambda_ = 0.95
      KLPolicyRegularizer.entropy = @FixedCoefficient()
      FixedCoefficient.value = 0.01
      KLPolicyRegularizer.kl_mu_pi = @LagrangeInequalityCoefficient()
      LagrangeInequalityCoefficient.threshold = 0.05
      awr.beta = 1.
      vmpo.e_n = 0.1
      NStep.n = 5
      VTrace.lambda_ = 1.
      AdvantagePreprocessor.offset = 0.
      GeneralizedAdvantagePolicyLoss.advantage_transformation = @softmax_all_dims
  """
  try:
    gin.parse_config(config)
    policy_loss, regularizer, estimator = _consumer()  # pylint: disable=no-value-for-parameter
  finally:
    gin.clear_config()
  assert isinstance(policy_loss, policy_losses.GeneralizedAdvantagePolicyLoss)
  assert policy_loss.ppo_epsilon == 0.3 and policy_loss.advantage_preprocessor.normalize
  assert policy_loss.advantage_transformation is policy_losses.softmax_all_dims
  assert isinstance(regularizer, policy_regularizers.KLPolicyRegularizer)
  assert isinstance(regularizer.coefficients['kl_mu_pi'],
                    constraints.LagrangeInequalityCoefficient)
  assert isinstance(estimator, advantages_lib.GAE) and estimator.lambda_ == 0.95
