"""V-trace against a direct numpy implementation of its definition (Espeholt et al. 2018, eq. 1)."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import vtrace

pytestmark = pytest.mark.timeout(120)


def _vtrace_by_definition(log_rhos, discounts, rewards, values, bootstrap_value,
                          clip_rho, clip_pg_rho, lambda_):
  """O(T^2) evaluation of the V-trace sums, one start time at a time."""
  rhos = np.exp(log_rhos)
  clipped_rhos = rhos if clip_rho is None else np.minimum(clip_rho, rhos)
  cs = lambda_ * np.minimum(1.0, rhos)
  values_t_plus_1 = np.concatenate([values[1:], bootstrap_value[None]], axis=0)
  deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
  seq_len = len(values)
  vs = np.zeros_like(values)
  for s in range(seq_len):
    total = np.zeros_like(bootstrap_value)
    for t in range(s, seq_len):
      trace = np.prod([discounts[i] * cs[i] for i in range(s, t)], axis=0) if t > s else 1.0
      total += trace * deltas[t]
    vs[s] = values[s] + total
  vs_t_plus_1 = np.concatenate([vs[1:], bootstrap_value[None]], axis=0)
  clipped_pg_rhos = rhos if clip_pg_rho is None else np.minimum(clip_pg_rho, rhos)
  pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
  return vs, pg_advantages


@pytest.mark.parametrize('clip_rho, clip_pg_rho, lambda_', [
    (3.7, 2.2, 1.0), (1.0, 1.0, 1.0), (None, None, 1.0), (1.0, 1.0, 0.5)])
def test_from_importance_weights_matches_definition(clip_rho, clip_pg_rho, lambda_):
  rng = np.random.RandomState(0)
  seq_len, batch = 7, 5
  log_rhos = rng.uniform(-2.5, 1.5, size=[seq_len, batch]).astype(np.float32)
  target = rng.randn(seq_len, batch).astype(np.float32)
  # Per-batch discounts, with some episode ends.
  discounts = np.where(rng.rand(seq_len, batch) < 0.2, 0.0,
                       rng.uniform(0.8, 1.0, size=[1, batch])).astype(np.float32)
  rewards = rng.randn(seq_len, batch).astype(np.float32)
  values = rng.randn(seq_len, batch).astype(np.float32)
  bootstrap_value = rng.randn(batch).astype(np.float32)

  output = vtrace.from_importance_weights(
      target_action_log_probs=target, behaviour_action_log_probs=target - log_rhos,
      discounts=discounts, rewards=rewards, values=values, bootstrap_value=bootstrap_value,
      clip_rho_threshold=clip_rho, clip_pg_rho_threshold=clip_pg_rho, lambda_=lambda_)
  assert isinstance(output, vtrace.VTraceReturns)
  expected_vs, expected_pg = _vtrace_by_definition(
      log_rhos, discounts, rewards, values, bootstrap_value, clip_rho, clip_pg_rho, lambda_)
  np.testing.assert_allclose(output.vs, expected_vs, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(output.pg_advantages, expected_pg, rtol=1e-5, atol=1e-5)


def test_on_policy_vtrace_is_the_n_step_return():
  rewards = np.array([[1.], [2.], [3.]], np.float32)
  discounts = np.full([3, 1], 0.5, np.float32)
  values = np.zeros([3, 1], np.float32)
  output = vtrace.from_importance_weights(
      np.zeros([3, 1]), np.zeros([3, 1]), discounts, rewards, values, np.array([8.], np.float32))
  np.testing.assert_allclose(output.vs[:, 0], [1 + .5 * 2 + .25 * 3 + .125 * 8,
                                               2 + .5 * 3 + .25 * 8, 3 + .5 * 8])


def test_outputs_carry_no_gradient_and_work_in_tf_function():
  values = tf.Variable(tf.ones([4, 2]))

  @tf.function
  def loss():
    with tf.GradientTape() as tape:
      out = vtrace.from_importance_weights(
          tf.zeros([4, 2]), tf.zeros([4, 2]), tf.fill([4, 2], 0.9), tf.ones([4, 2]),
          values, tf.ones([2]))
      total = tf.reduce_sum(out.vs) + tf.reduce_sum(out.pg_advantages)
    return tape.gradient(total, values)

  assert loss() is None


def test_rank_mismatch_is_rejected():
  with pytest.raises(ValueError):
    vtrace.from_importance_weights(np.zeros([3, 2]), np.zeros([3, 2]), np.zeros([3, 2]),
                                   np.zeros([3, 2]), np.zeros([3, 2]), np.zeros([3, 2]))
