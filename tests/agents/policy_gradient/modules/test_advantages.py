"""Advantage estimators against hand-computed cases and direct numpy evaluations of their sums."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import advantages
from seed_rl.common import vtrace as common_vtrace

pytestmark = pytest.mark.timeout(120)

T, B = 6, 3


def _unroll(seed, p_terminated=0.2, p_abandoned=0.15):
  """Random values [T+1, B], rewards, disjoint done_terminated / done_abandoned [T, B]."""
  rng = np.random.RandomState(seed)
  values = rng.randn(T + 1, B).astype(np.float32)
  rewards = rng.randn(T, B).astype(np.float32)
  u = rng.rand(T, B)
  terminated = u < p_terminated
  abandoned = (u >= p_terminated) & (u < p_terminated + p_abandoned)
  return values, rewards, terminated, abandoned


def _vtrace_by_definition(values, rewards, terminated, abandoned, gamma, lambda_, rhos):
  """O(T^2) sums: adv_t = sum_k prod_{t<i<=k} rho_i prod_{t<=i<k} (gamma lambda c_i) delta_k."""
  cont = (1. - terminated) * (1. - abandoned)
  deltas = (rewards + gamma * (1. - terminated) * values[1:] - values[:-1]) * (1. - abandoned)
  adv = np.zeros_like(rewards)
  for t in range(T):
    for k in range(t, T):
      weight = np.prod(rhos[t + 1:k + 1], axis=0) * np.prod(gamma * lambda_ * cont[t:k], axis=0)
      adv[t] += weight * deltas[k]
  targets = values[:-1] + rhos * adv
  return targets, adv


def _n_step_by_definition(values, rewards, terminated, abandoned, gamma, n):
  """Each start time's n-step return, walked step by step."""
  targets = np.zeros_like(rewards)
  for b in range(B):
    for t in range(T):
      ret, k = 0., 0
      while True:
        s = t + k
        if s == T or abandoned[s, b]:
          ret += gamma**k * values[s, b]
          break
        ret += gamma**k * rewards[s, b]
        if terminated[s, b]:
          break
        k += 1
        if k == n:
          ret += gamma**k * values[t + k, b]
          break
      targets[t, b] = ret
  return targets, targets - values[:-1]


def test_gae_without_rewards_and_discount_targets_the_bootstrap_value():
  values, _, _, _ = _unroll(0)
  no_done = np.zeros([T, B], bool)
  targets, adv = advantages.gae(values, np.zeros([T, B]), no_done, no_done, 1., lambda_=1.)
  np.testing.assert_allclose(targets, np.broadcast_to(values[-1], [T, B]), atol=1e-5)
  np.testing.assert_allclose(adv, values[-1] - values[:-1], atol=1e-5)


def test_gae_with_zero_discount_targets_the_rewards():
  values, rewards, terminated, _ = _unroll(1)
  no_done = np.zeros([T, B], bool)
  targets, adv = advantages.gae(values, rewards, terminated, no_done, 0., lambda_=0.7)
  np.testing.assert_allclose(targets, rewards, atol=1e-6)
  np.testing.assert_allclose(adv, rewards - values[:-1], atol=1e-6)


def test_gae_with_zero_lambda_is_the_one_step_td_target():
  values, rewards, terminated, abandoned = _unroll(2)
  targets, adv = advantages.gae(values, rewards, terminated, abandoned, 0.9, lambda_=0.)
  expected = np.where(abandoned, values[:-1], rewards + 0.9 * (1. - terminated) * values[1:])
  np.testing.assert_allclose(targets, expected, atol=1e-5)
  np.testing.assert_allclose(adv, expected - values[:-1], atol=1e-5)


def test_termination_and_abandonment():
  # One environment, 4 steps, gamma 0.5, lambda 1; values of the steps and the bootstrap.
  values = np.array([[1.], [2.], [4.], [8.], [16.]], np.float32)
  rewards = np.array([[1.], [1.], [1.], [1.]], np.float32)
  done = np.array([[False], [True], [False], [False]])
  # Terminated after step 1: nothing after it counts for steps 0 and 1.
  targets, _ = advantages.gae(values, rewards, done, np.zeros_like(done), 0.5)
  np.testing.assert_allclose(targets[:, 0], [1.5, 1., 1. + 0.5 * (1. + 0.5 * 16.), 1. + 8.])
  # Abandoned after step 1: step 1 keeps its value and step 0 bootstraps from it.
  targets, adv = advantages.gae(values, rewards, np.zeros_like(done), done, 0.5)
  np.testing.assert_allclose(targets[:, 0], [1. + 0.5 * 2., 2., 5.5, 9.])
  assert adv[1, 0] == 0.


@pytest.mark.parametrize('lambda_', [1., 0.6])
@pytest.mark.parametrize('gamma', [0.99, 0.5])
def test_gae_matches_its_sums(gamma, lambda_):
  values, rewards, terminated, abandoned = _unroll(3)
  targets, adv = advantages.gae(values, rewards, terminated, abandoned, gamma, lambda_)
  expected_targets, expected_adv = _vtrace_by_definition(values, rewards, terminated, abandoned,
                                                         gamma, lambda_, np.ones([T, B]))
  np.testing.assert_allclose(targets, expected_targets, atol=1e-5)
  np.testing.assert_allclose(adv, expected_adv, atol=1e-5)


@pytest.mark.parametrize('lambda_', [1., 0.5])
def test_vtrace_targets_equal_common_vtrace(lambda_):
  values, rewards, terminated, _ = _unroll(4)
  rng = np.random.RandomState(5)
  target_logp = rng.randn(T, B).astype(np.float32)
  behaviour_logp = target_logp - rng.uniform(-1.5, 1.5, [T, B]).astype(np.float32)
  targets, _ = advantages.vtrace(values, rewards, terminated, np.zeros_like(terminated), 0.9,
                                 target_logp, behaviour_logp, lambda_=lambda_)
  expected = common_vtrace.from_importance_weights(
      target_logp, behaviour_logp, discounts=0.9 * (1. - terminated), rewards=rewards,
      values=values[:-1], bootstrap_value=values[-1], lambda_=lambda_)
  np.testing.assert_allclose(targets, expected.vs, atol=1e-5)
  # The advantages are GAE-style ones, not IMPALA's `r + gamma vs' - V` (noted, not tested).


@pytest.mark.parametrize('max_importance_weight', [1., 2., None])
def test_vtrace_matches_its_sums(max_importance_weight):
  values, rewards, terminated, abandoned = _unroll(6)
  rng = np.random.RandomState(7)
  log_rhos = rng.uniform(-1.5, 1.5, [T, B]).astype(np.float32)
  targets, adv = advantages.vtrace(values, rewards, terminated, abandoned, 0.95, log_rhos,
                                   np.zeros([T, B], np.float32), lambda_=0.8,
                                   max_importance_weight=max_importance_weight)
  rhos = np.exp(log_rhos)
  if max_importance_weight is not None:
    rhos = np.minimum(rhos, max_importance_weight)
  expected_targets, expected_adv = _vtrace_by_definition(values, rewards, terminated, abandoned,
                                                         0.95, 0.8, rhos)
  np.testing.assert_allclose(targets, expected_targets, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(adv, expected_adv, rtol=1e-5, atol=1e-5)


def test_estimators_have_no_gradient():
  values = tf.Variable(tf.ones([T + 1, B]))
  no_done = tf.zeros([T, B], tf.bool)
  with tf.GradientTape() as tape:
    targets, adv = advantages.VTrace(lambda_=1.)(values, tf.ones([T, B]), no_done, no_done, 0.9,
                                                 tf.zeros([T, B]), tf.zeros([T, B]))
    loss = tf.reduce_sum(targets + adv)
  assert tape.gradient(loss, values) is None


@pytest.mark.parametrize('n', [T, T + 3])
def test_n_step_with_n_at_least_the_unroll_is_gae_with_lambda_one(n):
  values, rewards, terminated, abandoned = _unroll(8)
  targets, adv = advantages.NStep(n)(values, rewards, terminated, abandoned, 0.9)
  gae_targets, gae_adv = advantages.GAE(lambda_=1.)(values, rewards, terminated, abandoned, 0.9)
  np.testing.assert_allclose(targets, gae_targets, atol=1e-5)
  np.testing.assert_allclose(adv, gae_adv, atol=1e-5)


def test_one_step_returns():
  values, rewards, terminated, abandoned = _unroll(9)
  targets, _ = advantages.NStep(1)(values, rewards, terminated, abandoned, 0.9)
  expected = np.where(abandoned, values[:-1], rewards + 0.9 * (1. - terminated) * values[1:])
  np.testing.assert_allclose(targets, expected, atol=1e-5)


def test_n_step_terminated_and_abandoned():
  values = np.array([[1.], [2.], [4.], [8.], [16.]], np.float32)
  rewards = np.ones([4, 1], np.float32)
  done = np.array([[False], [True], [False], [False]])
  no_done = np.zeros_like(done)
  targets, _ = advantages.n_step_returns(values, rewards, done, no_done, 0.5, n=2)
  np.testing.assert_allclose(targets[:, 0], [1.5, 1., 1.5 + 0.25 * 16., 1. + 0.5 * 16.])
  targets, _ = advantages.n_step_returns(values, rewards, no_done, done, 0.5, n=2)
  np.testing.assert_allclose(targets[:, 0], [1. + 0.5 * 2., 2., 1.5 + 0.25 * 16., 9.])


@pytest.mark.parametrize('n', [1, 2, 3, 5])
def test_n_step_matches_its_definition(n):
  values, rewards, terminated, abandoned = _unroll(10, p_terminated=0.15, p_abandoned=0.15)
  targets, adv = advantages.n_step_returns(values, rewards, terminated, abandoned, 0.8, n)
  expected_targets, expected_adv = _n_step_by_definition(values, rewards, terminated, abandoned,
                                                         0.8, n)
  np.testing.assert_allclose(targets, expected_targets, atol=1e-5)
  np.testing.assert_allclose(adv, expected_adv, atol=1e-5)


def test_estimators_run_in_graphs_with_unknown_unroll_length():
  spec = [tf.TensorSpec([None, None], tf.float32)] * 2 + [tf.TensorSpec([None, None], tf.bool)] * 2
  n_step = tf.function(lambda *a: advantages.NStep(3)(*a, 0.8), input_signature=spec)
  gae = tf.function(lambda *a: advantages.GAE(0.9)(*a, 0.8), input_signature=spec)
  values, rewards, terminated, abandoned = _unroll(11)
  np.testing.assert_allclose(
      n_step(values, rewards, terminated, abandoned)[0],
      _n_step_by_definition(values, rewards, terminated, abandoned, 0.8, 3)[0], atol=1e-5)
  np.testing.assert_allclose(
      gae(values, rewards, terminated, abandoned)[0],
      advantages.gae(values, rewards, terminated, abandoned, 0.8, 0.9)[0], atol=1e-6)


def test_bad_arguments_are_refused():
  with pytest.raises(ValueError, match='one step more'):
    advantages.gae(np.zeros([T, B]), np.zeros([T, B]), np.zeros([T, B], bool),
                   np.zeros([T, B], bool), 0.9)
  with pytest.raises(ValueError, match='at least 1'):
    advantages.NStep(0)
