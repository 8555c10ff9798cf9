"""Parametric action distributions.

A network outputs a flat vector of `param_size` numbers per step; a
`ParametricDistribution` turns those numbers into a TensorFlow Probability
distribution over actions. The learners only ever talk to this abstraction
(sample, log-prob, entropy, KL), which is what lets one V-trace/R2D2/SAC
implementation serve discrete, multi-discrete, bounded continuous and tuple
action spaces alike.

Everything here works on tensors with any number of leading batch dimensions
(e.g. `[T, B, param_size]`) and inside `tf.function`.
"""

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

tfb = tfp.bijectors
tfd = tfp.distributions

# Maps unconstrained network outputs to positive standard deviations.
StdFn = Callable[[tf.Tensor], tf.Tensor]


class ParametricDistribution:
  """Action distribution parametrized by a flat vector of parameters.

  Calling the object with a `[..., param_size]` tensor returns the TFP
  distribution whose batch shape is the leading `...` dimensions.
  """

  def __init__(self, param_size: int,
               create_dist: Callable[[tf.Tensor], tfd.Distribution]):
    """Creates the parametric distribution.

    Args:
      param_size: Number of parameters the policy head must output per step.
      create_dist: Function from a `[..., param_size]` tensor to a TFP
        distribution with batch shape `[...]`.
    """
    self._param_size = param_size
    self._create_dist = create_dist

  @property
  def create_dist(self) -> Callable[[tf.Tensor], tfd.Distribution]:
    return self._create_dist

  @tf.autograph.experimental.do_not_convert
  def __call__(self, params: tf.Tensor) -> tfd.Distribution:
    return self._create_dist(params)

  @property
  def param_size(self) -> int:
    return self._param_size

  @property
  def reparametrizable(self) -> bool:
    """Whether samples are differentiable w.r.t. the parameters.

    Decided on a distribution built from all-zero parameters, since the
    reparameterization type does not depend on parameter values.
    """
    dist = self._create_dist(tf.zeros((self._param_size,)))
    return dist.reparameterization_type == tfd.FULLY_REPARAMETERIZED

  @tf.autograph.experimental.do_not_convert
  def sample(self, parameters: tf.Tensor) -> tf.Tensor:
    return self._create_dist(parameters).sample()

  @tf.autograph.experimental.do_not_convert
  def log_prob(self, parameters: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
    return self._create_dist(parameters).log_prob(actions)

  @tf.autograph.experimental.do_not_convert
  def entropy(self, parameters: tf.Tensor) -> tf.Tensor:
    """Entropy (a 1-sample estimate for tanh-transformed actions)."""
    return self._create_dist(parameters).entropy()

  @tf.autograph.experimental.do_not_convert
  def kl_divergence(self, parameters_a: tf.Tensor,
                    parameters_b: tf.Tensor) -> tf.Tensor:
    """KL(dist(parameters_a) || dist(parameters_b))."""
    return tfd.kl_divergence(self._create_dist(parameters_a),
                             self._create_dist(parameters_b))


def categorical_distribution(n: int, dtype: Any) -> ParametricDistribution:
  """Categorical over `n` actions given by logits; samples have `dtype`."""
  dtype = tf.as_dtype(dtype)

  def create_dist(parameters):
    return tfd.Categorical(logits=parameters, dtype=dtype)

  return ParametricDistribution(n, create_dist)


def multi_categorical_distribution(n_dimensions: int, n_actions_per_dim: int,
                                   dtype: Any) -> ParametricDistribution:
  """Independent categoricals, one per action dimension, all of the same size.

  Parameters are `[..., n_dimensions * n_actions_per_dim]` logits, read as
  `[..., n_dimensions, n_actions_per_dim]`; actions are `[..., n_dimensions]`.
  """
  dtype = tf.as_dtype(dtype)

  def create_dist(parameters):
    shape = tf.concat(
        [tf.shape(parameters)[:-1], [n_dimensions, n_actions_per_dim]], axis=0)
    logits = tf.reshape(parameters, shape)
    return tfd.Independent(
        tfd.Categorical(logits=logits, dtype=dtype),
        reinterpreted_batch_ndims=1)

  return ParametricDistribution(n_dimensions * n_actions_per_dim, create_dist)


class TanhTransformedDistribution(tfd.TransformedDistribution):
  """A distribution pushed through tanh, with a log-prob safe at +-1.

  The plain change-of-variables log-density diverges at the boundary of
  (-1, 1), yet actions of exactly +-1 are common (float rounding of tanh, or
  actions clipped by an environment). Events are therefore clipped to
  `[-threshold, threshold]` and those at the clip point get the *average*
  log-density of the base tail beyond `atanh(threshold)`, i.e.
  `log(tail_mass) - log(1 - threshold)`. That value is finite and
  differentiable with respect to the base distribution's parameters (but not
  the action).
  """

  def __init__(self, distribution: tfd.Distribution, threshold: float = 0.999,
               validate_args: bool = False, name: str | None = None):
    parameters = dict(locals())
    if not 0. < threshold < 1.:
      raise ValueError(f'threshold must be in (0, 1), got {threshold!r}')
    self._threshold = threshold
    super().__init__(
        distribution=distribution,
        bijector=tfb.Tanh(),
        validate_args=validate_args,
        parameters=parameters,
        name=name or 'TanhTransformedDistribution')

  @property
  def threshold(self) -> float:
    return self._threshold

  @classmethod
  def _parameter_properties(cls, dtype, num_classes=None):
    # Only the base distribution carries batch structure (tanh has none);
    # `threshold` is a static Python float.
    return {'distribution': tfp.util.BatchedComponentProperties()}

  def _log_prob(self, event, **kwargs):
    threshold = tf.cast(self._threshold, event.dtype)
    clipped = tf.clip_by_value(event, -threshold, threshold)
    inner = super()._log_prob(clipped, **kwargs)
    # Base-space point beyond which the whole tail is lumped together.
    atanh_threshold = tf.cast(math.atanh(self._threshold), event.dtype)
    log_width = tf.cast(math.log1p(-self._threshold), event.dtype)
    log_prob_left = self.distribution.log_cdf(-atanh_threshold) - log_width
    log_prob_right = (
        self.distribution.log_survival_function(atanh_threshold) - log_width)
    return tf.where(
        clipped <= -threshold, log_prob_left,
        tf.where(clipped >= threshold, log_prob_right, inner))

  def _mode(self, **kwargs):
    return self.bijector.forward(self.distribution.mode(**kwargs))

  def _mean(self, **kwargs):
    # Not the true mean of tanh(X); the tanh of the base mean, as in SEED RL.
    return self.bijector.forward(self.distribution.mean(**kwargs))

  def _entropy(self, seed=None, **kwargs):
    """Single-sample estimate: H(X) + E[log|d tanh(x)/dx|] with one x ~ X."""
    base_sample = self.distribution.sample(seed=seed)
    return self.distribution.entropy() + self.bijector.forward_log_det_jacobian(
        base_sample, event_ndims=0)


@tfd.RegisterKL(TanhTransformedDistribution, TanhTransformedDistribution)
def _kl_tanh_transformed(a, b, name='kl_tanh_transformed'):
  """KL is invariant under the same bijection applied to both sides."""
  return tfd.kl_divergence(a.distribution, b.distribution, name=name)


def _default_gaussian_std_fn(scale: tf.Tensor) -> tf.Tensor:
  return tf.nn.softplus(scale) + 1e-3


def normal_tanh_distribution(
    num_actions: int,
    gaussian_std_fn: StdFn = _default_gaussian_std_fn
) -> ParametricDistribution:
  """Diagonal Gaussian squashed by tanh into (-1, 1)^num_actions.

  Parameters are `[..., 2 * num_actions]`: the means, then the raw scales
  that `gaussian_std_fn` maps to standard deviations.
  """

  def create_dist(parameters):
    loc, raw_scale = tf.split(parameters, 2, axis=-1)
    normal = tfd.Normal(loc=loc, scale=gaussian_std_fn(raw_scale))
    return tfd.Independent(TanhTransformedDistribution(normal),
                           reinterpreted_batch_ndims=1)

  return ParametricDistribution(2 * num_actions, create_dist)


class ClippedIdentity(tfb.Bijector):
  """Clips to [-1, 1] going forward, and pretends to be the identity otherwise.

  Not a true bijection: the inverse and the log-det-Jacobian are those of
  the identity, so log-probs are the base density at the (clipped) action.
  """

  def __init__(self, validate_args: bool = False,
               name: str = 'clipped_identity'):
    parameters = dict(locals())
    super().__init__(
        forward_min_event_ndims=0,
        is_constant_jacobian=True,
        validate_args=validate_args,
        parameters=parameters,
        name=name)

  @classmethod
  def _is_increasing(cls):
    return False

  def _forward(self, x):
    return tf.clip_by_value(x, -1., 1.)

  def _inverse(self, y):
    return y

  def _inverse_log_det_jacobian(self, y):
    return tf.constant(0., dtype=y.dtype)

  def _forward_log_det_jacobian(self, x):
    return tf.constant(0., dtype=x.dtype)


# One shared instance: TFP's KL between two TransformedDistributions only
# applies when their bijectors compare equal.
CLIPPED_IDENTITY = ClippedIdentity()


def normal_clipped_distribution(
    num_actions: int,
    gaussian_std_fn: StdFn = _default_gaussian_std_fn
) -> ParametricDistribution:
  """Diagonal Gaussian whose samples are clipped to [-1, 1].

  Parameters are `[..., 2 * num_actions]` (means, then raw scales).
  """

  def create_dist(parameters):
    loc, raw_scale = tf.split(parameters, 2, axis=-1)
    normal = tfd.Normal(loc=loc, scale=gaussian_std_fn(raw_scale))
    return tfd.Independent(
        tfd.TransformedDistribution(
            distribution=normal, bijector=CLIPPED_IDENTITY),
        reinterpreted_batch_ndims=1)

  return ParametricDistribution(2 * num_actions, create_dist)


def deterministic_tanh_distribution(num_actions: int) -> ParametricDistribution:
  """Deterministic action `tanh(params)` (e.g. for DDPG-style policies)."""

  def create_dist(parameters):
    return tfd.Independent(
        TanhTransformedDistribution(tfd.Deterministic(loc=parameters)),
        reinterpreted_batch_ndims=1)

  return ParametricDistribution(num_actions, create_dist)


def joint_distribution(
    parametric_distributions: Sequence[ParametricDistribution],
    dtype_override: Any = tf.float32) -> ParametricDistribution:
  """Concatenation of independent sub-distributions (for Tuple spaces).

  Parameters are the sub-distributions' parameters concatenated on the last
  axis; actions are their (vector) events concatenated and cast to
  `dtype_override`, so mixed discrete/continuous actions fit in one tensor.
  """
  parametric_distributions = list(parametric_distributions)
  if not parametric_distributions:
    raise ValueError('joint_distribution needs at least one distribution.')
  param_sizes = [d.param_size for d in parametric_distributions]

  def create_dist(parameters):
    split = tf.split(parameters, param_sizes, axis=-1)
    dists = [d(p) for d, p in zip(parametric_distributions, split, strict=True)]
    return tfd.Blockwise(dists, dtype_override=dtype_override)

  return ParametricDistribution(sum(param_sizes), create_dist)


def _space_kind(space: Any) -> str | None:
  """Space class name for gymnasium and (by duck typing) old gym spaces."""
  names = {cls.__name__ for cls in type(space).__mro__}
  for kind in ('MultiDiscrete', 'Discrete', 'Box', 'Tuple'):
    if kind in names:
      return kind
  return None


def check_multi_discrete_space(space: Any) -> None:
  """Raises unless all dimensions of a MultiDiscrete space have one size."""
  nvec = np.asarray(space.nvec)
  if nvec.ndim != 1 or not np.all(nvec == nvec.flat[0]):
    raise ValueError(
        'Only 1-D MultiDiscrete action spaces with the same number of actions '
        f'in every dimension are supported, got nvec={nvec.tolist()} in '
        f'{space}')
  if np.any(np.asarray(getattr(space, 'start', 0)) != 0):
    raise ValueError(f'MultiDiscrete spaces must start at 0, got {space}')


def check_box_space(space: Any) -> None:
  """Raises unless the Box space is 1-D and bounded exactly to [-1, 1]."""
  if len(space.shape) != 1:
    raise ValueError(
        'Learner only supports actions bounded to [-1,1] in a 1-D Box, got '
        f'shape {tuple(space.shape)} in {space}')
  if not (np.all(np.asarray(space.low) == -1) and
          np.all(np.asarray(space.high) == 1)):
    raise ValueError(
        'Learner only supports actions bounded to [-1,1], got '
        f'low={np.asarray(space.low).tolist()} '
        f'high={np.asarray(space.high).tolist()} in {space}')


def get_parametric_distribution_for_action_space(
    action_space: Any,
    continuous_config: 'ContinuousDistributionConfig | None' = None
) -> ParametricDistribution:
  """Returns the action distribution matching a gym(nasium) action space.

  Args:
    action_space: A `Discrete`, `MultiDiscrete`, `Box` or `Tuple` space from
      gymnasium or (recognized by class name) the legacy `gym` package.
    continuous_config: How to build distributions for Box spaces; defaults to
      `ContinuousDistributionConfig()`.

  Raises:
    ValueError: for unsupported spaces or spaces with unsupported shapes or
      bounds.
  """
  kind = _space_kind(action_space)
  if kind == 'Discrete':
    if int(getattr(action_space, 'start', 0)) != 0:
      raise ValueError(f'Discrete action spaces must start at 0, got '
                       f'{action_space}')
    return categorical_distribution(int(action_space.n),
                                    dtype=action_space.dtype)
  if kind == 'MultiDiscrete':
    check_multi_discrete_space(action_space)
    nvec = np.asarray(action_space.nvec)
    return multi_categorical_distribution(
        n_dimensions=int(nvec.shape[0]),
        n_actions_per_dim=int(nvec[0]),
        dtype=action_space.dtype)
  if kind == 'Box':
    check_box_space(action_space)
    if continuous_config is None:
      continuous_config = ContinuousDistributionConfig()
    num_actions = int(action_space.shape[0])
    if continuous_config.postprocessor == 'Tanh':
      return normal_tanh_distribution(
          num_actions=num_actions,
          gaussian_std_fn=continuous_config.gaussian_std_fn)
    if continuous_config.postprocessor == 'ClippedIdentity':
      return normal_clipped_distribution(
          num_actions=num_actions,
          gaussian_std_fn=continuous_config.gaussian_std_fn)
    raise ValueError(
        'Unsupported postprocessor '
        f'{continuous_config.postprocessor!r}; expected Tanh or '
        'ClippedIdentity')
  if kind == 'Tuple':
    return joint_distribution([
        get_parametric_distribution_for_action_space(subspace,
                                                     continuous_config)
        for subspace in action_space
    ])
  raise ValueError(f'Unsupported action space {action_space}')


@tf.custom_gradient
def safe_exp(x: tf.Tensor) -> tf.Tensor:
  """exp(clip(x, -15, 15)) whose gradient ignores the clipping.

  Clipping keeps the std finite; the straight-through gradient `dy * exp`
  keeps learning signal for parameters that drifted outside the clip range.
  """
  e = tf.exp(tf.clip_by_value(x, -15., 15.))

  def grad(dy):
    return dy * e

  return e, grad


def _check_std_fn(name: str, std_fn_np: Callable[[float], float],
                  std_for_zero_param: float, min_std: float) -> None:
  """Raises unless std_fn_np(0) == std_for_zero_param (within 1e-3)."""
  value_at_zero = std_fn_np(0.)
  if not abs(value_at_zero - std_for_zero_param) < 1e-3:
    raise ValueError(
        f'{name}: param 0 maps to std {value_at_zero}, expected '
        f'std_for_zero_param={std_for_zero_param} (min_std={min_std})')


def _check_std_bounds(name: str, std_for_zero_param: float,
                      min_std: float) -> None:
  if not std_for_zero_param > min_std:
    raise ValueError(
        f'{name}: std_for_zero_param ({std_for_zero_param}) must exceed '
        f'min_std ({min_std})')


def safe_exp_std_fn(std_for_zero_param: float, min_std: float) -> StdFn:
  """Std `safe_exp(x + shift) + min_std`; param 0 gives std_for_zero_param."""
  _check_std_bounds('safe_exp_std_fn', std_for_zero_param, min_std)
  std_shift = math.log(std_for_zero_param - min_std)
  _check_std_fn('safe_exp_std_fn',
                lambda x: math.exp(min(max(x + std_shift, -15.), 15.))
                + min_std,
                std_for_zero_param, min_std)

  def std_fn(scale):
    return safe_exp(scale + std_shift) + min_std

  return std_fn


def softplus_std_fn(std_for_zero_param: float, min_std: float) -> StdFn:
  """Std `softplus(x + shift) + min_std`; param 0 gives std_for_zero_param."""
  _check_std_bounds('softplus_std_fn', std_for_zero_param, min_std)
  # Inverse softplus: log(exp(y) - 1).
  std_shift = math.log(math.expm1(std_for_zero_param - min_std))
  _check_std_fn('softplus_std_fn',
                lambda x: math.log1p(math.exp(x + std_shift)) + min_std,
                std_for_zero_param, min_std)

  def std_fn(scale):
    return tf.nn.softplus(scale + std_shift) + min_std

  return std_fn


@dataclasses.dataclass
class ContinuousDistributionConfig:
  """Configuration for continuous (Box) action distributions.

  Attributes:
    gaussian_std_fn: Maps the raw scale outputs of the network to stds.
    postprocessor: 'Tanh' (squash samples with tanh) or 'ClippedIdentity'
      (clip samples to [-1, 1]).
  """
  gaussian_std_fn: StdFn = _default_gaussian_std_fn
  postprocessor: str = 'Tanh'


def continuous_action_config(
    action_min_gaussian_std: float = 1e-3,
    action_gaussian_std_fn: str = 'softplus',
    action_std_for_zero_param: float = 1,
    action_postprocessor: str = 'Tanh') -> ContinuousDistributionConfig:
  """Builds a ContinuousDistributionConfig from flag-like values.

  Args:
    action_min_gaussian_std: Lower bound added to every std.
    action_gaussian_std_fn: 'softplus' or 'safe_exp'.
    action_std_for_zero_param: Std obtained for a raw scale of 0.
    action_postprocessor: 'Tanh' or 'ClippedIdentity'.
  """
  std_fns = {'softplus': softplus_std_fn, 'safe_exp': safe_exp_std_fn}
  if action_gaussian_std_fn not in std_fns:
    raise ValueError(
        f'Unknown action_gaussian_std_fn {action_gaussian_std_fn!r}; expected '
        f'one of {sorted(std_fns)}')
  if action_postprocessor not in ('Tanh', 'ClippedIdentity'):
    raise ValueError(
        f'Unknown action_postprocessor {action_postprocessor!r}; expected '
        "'Tanh' or 'ClippedIdentity'")
  std_fn = std_fns[action_gaussian_std_fn](action_std_for_zero_param,
                                           action_min_gaussian_std)
  return ContinuousDistributionConfig(gaussian_std_fn=std_fn,
                                      postprocessor=action_postprocessor)
