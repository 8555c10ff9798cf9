"""Tests for seed_rl.common.parametric_distribution against closed forms."""

import math

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import parametric_distribution as pd


def _log_softmax(logits):
  logits = logits - logits.max(axis=-1, keepdims=True)
  return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))


def _categorical_entropy(logits):
  logp = _log_softmax(logits)
  return -(np.exp(logp) * logp).sum(axis=-1)


def _categorical_kl(logits_a, logits_b):
  logp_a, logp_b = _log_softmax(logits_a), _log_softmax(logits_b)
  return (np.exp(logp_a) * (logp_a - logp_b)).sum(axis=-1)


def _normal_log_pdf(x, loc, scale):
  return -0.5 * ((x - loc) / scale)**2 - np.log(scale) - 0.5 * np.log(2 * np.pi)


def _normal_kl(loc_a, scale_a, loc_b, scale_b):
  return (np.log(scale_b / scale_a) +
          (scale_a**2 + (loc_a - loc_b)**2) / (2 * scale_b**2) - 0.5)


def _softplus(x):
  return np.log1p(np.exp(x))


@pytest.mark.timeout(60)
def test_categorical_log_prob_matches_log_softmax():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(4, 3, 5)).astype(np.float32)  # [T, B, n]
  actions = rng.integers(0, 5, size=(4, 3)).astype(np.int32)
  dist = pd.categorical_distribution(5, tf.int32)
  expected = np.take_along_axis(
      _log_softmax(logits), actions[..., None], axis=-1)[..., 0]
  np.testing.assert_allclose(
      dist.log_prob(tf.constant(logits), tf.constant(actions)), expected,
      rtol=1e-5, atol=1e-5)
  assert dist.param_size == 5
  assert not dist.reparametrizable


@pytest.mark.timeout(60)
@pytest.mark.parametrize('dtype', [tf.int32, tf.int64])
def test_categorical_samples_have_requested_dtype(dtype):
  dist = pd.categorical_distribution(3, dtype)
  assert dist.sample(tf.zeros([2, 3])).dtype == dtype
  multi = pd.multi_categorical_distribution(2, 3, dtype)
  sample = multi.sample(tf.zeros([4, 2, 6]))
  assert sample.dtype == dtype
  assert sample.shape == (4, 2, 2)


@pytest.mark.timeout(60)
def test_categorical_entropy_and_kl():
  rng = np.random.default_rng(1)
  a = rng.normal(size=(3, 6)).astype(np.float32)
  b = rng.normal(size=(3, 6)).astype(np.float32)
  dist = pd.categorical_distribution(6, tf.int64)
  np.testing.assert_allclose(dist.entropy(a), _categorical_entropy(a),
                             rtol=1e-5)
  np.testing.assert_allclose(dist.kl_divergence(a, b), _categorical_kl(a, b),
                             rtol=1e-4, atol=1e-6)


@pytest.mark.timeout(60)
def test_multi_categorical_entropy_kl_and_log_prob():
  rng = np.random.default_rng(2)
  n_dims, n_per_dim = 3, 4
  a = rng.normal(size=(2, 5, n_dims * n_per_dim)).astype(np.float32)
  b = rng.normal(size=(2, 5, n_dims * n_per_dim)).astype(np.float32)
  a_logits = a.reshape(2, 5, n_dims, n_per_dim)
  b_logits = b.reshape(2, 5, n_dims, n_per_dim)
  dist = pd.multi_categorical_distribution(n_dims, n_per_dim, tf.int32)
  assert dist.param_size == 12
  np.testing.assert_allclose(
      dist.entropy(a), _categorical_entropy(a_logits).sum(-1), rtol=1e-5)
  np.testing.assert_allclose(
      dist.kl_divergence(a, b), _categorical_kl(a_logits, b_logits).sum(-1),
      rtol=1e-4, atol=1e-6)
  actions = rng.integers(0, n_per_dim, size=(2, 5, n_dims)).astype(np.int32)
  expected = np.take_along_axis(
      _log_softmax(a_logits), actions[..., None], axis=-1)[..., 0].sum(-1)
  np.testing.assert_allclose(dist.log_prob(a, actions), expected, rtol=1e-5)


@pytest.mark.timeout(60)
def test_tanh_normal_log_prob_change_of_variables():
  rng = np.random.default_rng(3)
  loc = rng.normal(size=(4, 2, 3)).astype(np.float32)
  raw_scale = rng.normal(size=(4, 2, 3)).astype(np.float32)
  params = np.concatenate([loc, raw_scale], axis=-1)
  actions = rng.uniform(-0.9, 0.9, size=(4, 2, 3)).astype(np.float32)
  dist = pd.normal_tanh_distribution(3)
  assert dist.param_size == 6
  assert dist.reparametrizable
  scale = _softplus(raw_scale.astype(np.float64)) + 1e-3
  pre_tanh = np.arctanh(actions.astype(np.float64))
  expected = (_normal_log_pdf(pre_tanh, loc, scale) -
              np.log(1 - actions.astype(np.float64)**2)).sum(-1)
  np.testing.assert_allclose(dist.log_prob(params, actions), expected,
                             rtol=1e-4, atol=1e-4)
  tfp_dist = dist(params)
  np.testing.assert_allclose(tfp_dist.mode(), np.tanh(loc), rtol=1e-6)
  np.testing.assert_allclose(tfp_dist.mean(), np.tanh(loc), rtol=1e-6)


@pytest.mark.timeout(60)
def test_tanh_normal_log_prob_at_boundary_is_finite_and_differentiable():
  dist = pd.normal_tanh_distribution(2)
  params = tf.constant([[0.3, -0.2, 0.1, -0.5], [1.0, -1.0, 0.0, 0.0]])
  actions = tf.constant([[1.0, -1.0], [-1.0, 1.0]])

  @tf.function
  def log_prob_and_grad(params):
    with tf.GradientTape() as tape:
      tape.watch(params)
      log_prob = dist.log_prob(params, actions)
    return log_prob, tape.gradient(log_prob, params)

  log_prob, grad = log_prob_and_grad(params)
  assert np.all(np.isfinite(log_prob))
  assert np.all(np.isfinite(grad))
  assert np.all(np.abs(grad.numpy()) > 0)
  # The boundary value is log(tail mass beyond atanh(0.999)) - log(0.001).
  loc, raw = params.numpy()[0, :2], params.numpy()[0, 2:]
  scale = _softplus(raw.astype(np.float64)) + 1e-3
  edge = np.arctanh(0.999)
  right = 0.5 * math.erfc((edge - loc[0]) / scale[0] / math.sqrt(2))
  left = 0.5 * math.erfc((edge + loc[1]) / scale[1] / math.sqrt(2))
  expected = np.log(right) + np.log(left) - 2 * np.log(1e-3)
  np.testing.assert_allclose(log_prob[0], expected, rtol=1e-4)


@pytest.mark.timeout(60)
def test_tanh_normal_entropy_and_kl_in_tf_function_with_time_batch():
  rng = np.random.default_rng(4)
  a = tf.constant(rng.normal(size=(5, 3, 4)).astype(np.float32))
  b = tf.constant(rng.normal(size=(5, 3, 4)).astype(np.float32))
  dist = pd.normal_tanh_distribution(2)

  @tf.function
  def run(a, b):
    sample = dist.sample(a)
    return sample, dist.entropy(a), dist.kl_divergence(a, b)

  sample, entropy, kl = run(a, b)
  assert sample.shape == (5, 3, 2)
  assert np.all(np.abs(sample.numpy()) <= 1)
  assert entropy.shape == (5, 3) and np.all(np.isfinite(entropy))
  # KL of the tanh-squashed distributions is the KL of the Gaussians.
  loc_a, raw_a = np.split(a.numpy().astype(np.float64), 2, axis=-1)
  loc_b, raw_b = np.split(b.numpy().astype(np.float64), 2, axis=-1)
  expected = _normal_kl(loc_a, _softplus(raw_a) + 1e-3,
                        loc_b, _softplus(raw_b) + 1e-3).sum(-1)
  np.testing.assert_allclose(kl, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.timeout(60)
def test_clipped_normal_kl_and_samples():
  rng = np.random.default_rng(5)
  a = rng.normal(size=(3, 6)).astype(np.float32)
  b = rng.normal(size=(3, 6)).astype(np.float32)
  dist = pd.normal_clipped_distribution(3)
  np.testing.assert_allclose(dist.kl_divergence(a, a), np.zeros(3), atol=1e-6)
  loc_a, raw_a = np.split(a.astype(np.float64), 2, axis=-1)
  loc_b, raw_b = np.split(b.astype(np.float64), 2, axis=-1)
  expected = _normal_kl(loc_a, _softplus(raw_a) + 1e-3,
                        loc_b, _softplus(raw_b) + 1e-3).sum(-1)
  np.testing.assert_allclose(dist.kl_divergence(a, b), expected, rtol=1e-4,
                             atol=1e-5)
  wide = np.concatenate([np.zeros((1000, 3)), np.full((1000, 3), 3.)], -1)
  samples = dist.sample(tf.constant(wide, tf.float32)).numpy()
  assert samples.min() == -1. and samples.max() == 1.


@pytest.mark.timeout(60)
def test_deterministic_tanh():
  dist = pd.deterministic_tanh_distribution(2)
  params = tf.constant([[0.5, -2.0]])
  np.testing.assert_allclose(dist.sample(params), np.tanh([[0.5, -2.0]]),
                             rtol=1e-6)


@pytest.mark.timeout(60)
def test_joint_distribution_shapes_and_log_prob():
  box = gym.spaces.Box(-1., 1., (3,))
  multi_discrete = gym.spaces.MultiDiscrete([4, 4, 4])
  space = gym.spaces.Tuple((box, multi_discrete))
  dist = pd.get_parametric_distribution_for_action_space(space)
  parts = [pd.get_parametric_distribution_for_action_space(s)
           for s in (box, multi_discrete)]
  assert dist.param_size == 6 + 12
  assert not dist.reparametrizable
  params = tf.random.stateless_normal([3, 2, dist.param_size], seed=[1, 2])
  assert dist.entropy(params).shape == (3, 2)
  actions = dist.sample(params)
  assert actions.shape == (3, 2, 6) and actions.dtype == tf.float32
  box_params, md_params = tf.split(params, [6, 12], axis=-1)
  box_actions, md_actions = tf.split(actions, [3, 3], axis=-1)
  expected = (parts[0].log_prob(box_params, box_actions) +
              parts[1].log_prob(md_params, tf.cast(md_actions, tf.int64)))
  np.testing.assert_allclose(dist.log_prob(params, actions), expected,
                             rtol=1e-5, atol=1e-5)


@pytest.mark.timeout(60)
def test_space_dispatch_and_configs():
  discrete = pd.get_parametric_distribution_for_action_space(
      gym.spaces.Discrete(7))
  assert discrete.param_size == 7
  assert discrete.sample(tf.zeros([2, 7])).dtype == tf.int64
  box = gym.spaces.Box(-1., 1., (2,))
  clipped = pd.get_parametric_distribution_for_action_space(
      box, pd.continuous_action_config(action_postprocessor='ClippedIdentity'))
  tfp_dist = clipped(tf.zeros([1, 4]))
  assert tfp_dist.distribution.bijector is pd.CLIPPED_IDENTITY
  with pytest.raises(ValueError, match='postprocessor'):
    pd.continuous_action_config(action_postprocessor='Sigmoid')
  with pytest.raises(ValueError, match='action_gaussian_std_fn'):
    pd.continuous_action_config(action_gaussian_std_fn='relu')


@pytest.mark.timeout(60)
def test_legacy_gym_spaces_by_duck_typing():

  class Discrete:  # Stands in for gym.spaces.Discrete of the old gym package.

    def __init__(self, n):
      self.n = n
      self.dtype = np.int64

  class MultiDiscrete:

    def __init__(self, nvec):
      self.nvec = np.asarray(nvec)
      self.dtype = np.int64

  assert pd.get_parametric_distribution_for_action_space(
      Discrete(19)).param_size == 19
  assert pd.get_parametric_distribution_for_action_space(
      MultiDiscrete([5, 5])).param_size == 10


@pytest.mark.timeout(60)
@pytest.mark.parametrize('space, message', [
    (gym.spaces.Box(-np.inf, np.inf, (3,)),
     r'Learner only supports actions bounded to \[-1,1\]'),
    (gym.spaces.Box(-2., 2., (3,)),
     r'Learner only supports actions bounded to \[-1,1\]'),
    (gym.spaces.Box(-1., 1., (2, 3)), r'1-D Box.*\(2, 3\)'),
    (gym.spaces.MultiDiscrete([3, 4]), r'nvec=\[3, 4\]'),
    (gym.spaces.Dict({'a': gym.spaces.Discrete(2)}),
     'Unsupported action space Dict'),
])
def test_unsupported_action_spaces(space, message):
  with pytest.raises(ValueError, match=message):
    pd.get_parametric_distribution_for_action_space(space)


@pytest.mark.timeout(60)
def test_safe_exp_clips_with_straight_through_gradient():
  x = tf.constant([-100., 0., 1., 100.])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = pd.safe_exp(x)
  expected = np.exp(np.clip([-100., 0., 1., 100.], -15., 15.))
  np.testing.assert_allclose(y, expected, rtol=1e-6)
  # Gradient is exp(clipped x) everywhere, also where clipping was active.
  np.testing.assert_allclose(tape.gradient(y, x), expected, rtol=1e-6)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('make_fn', [pd.safe_exp_std_fn, pd.softplus_std_fn])
def test_std_fns_map_zero_to_std_for_zero_param(make_fn):
  for std_for_zero, min_std in [(1., 1e-3), (0.5, 0.1), (3., 0.)]:
    std_fn = make_fn(std_for_zero, min_std)
    np.testing.assert_allclose(std_fn(tf.constant(0.)), std_for_zero,
                               atol=1e-5)
    assert std_fn(tf.constant(-50.)).numpy() >= min_std
  with pytest.raises(ValueError, match='must exceed min_std'):
    make_fn(0.1, 0.2)
  config = pd.continuous_action_config(action_std_for_zero_param=2.)
  np.testing.assert_allclose(config.gaussian_std_fn(tf.constant(0.)), 2.,
                             atol=1e-5)
  default = pd.ContinuousDistributionConfig()
  assert default.postprocessor == 'Tanh'
  np.testing.assert_allclose(default.gaussian_std_fn(tf.constant(0.)),
                             np.log(2.) + 1e-3, rtol=1e-6)
