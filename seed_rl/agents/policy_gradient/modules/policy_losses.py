"""Policy losses of the on-policy agent: policy gradient, V-trace, PPO, AWR, V-MPO, imitation.

All are one `GeneralizedAdvantagePolicyLoss`, a weighted log-likelihood
`loss_t = -log pi(a_t|x_t) * sg(w_t)` whose gradient is the policy gradient with weights `w_t`
derived from the advantages; the factories (`pg`, `vtrace`, `ppo`, `awr`, `vmpo`, `bc_logp`,
`repeat_positive_advantages`) pick the derivation. A policy loss is a
`generalized_onpolicy_loss.PolicyLoss`: called as `loss(advantages, target_action_log_probs,
behaviour_action_log_probs, actions, target_logits, behaviour_logits,
parametric_action_distribution)` on `[T, B]` tensors, it returns the mean loss over the steps.
"""

import math
from collections.abc import Callable
from typing import Any

import gin
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import constraints
from seed_rl.agents.policy_gradient.modules import generalized_onpolicy_loss
from seed_rl.common.training import logging_module

Transformation = Callable[[tf.Tensor], tf.Tensor]

# Normalized advantages divide by the standard deviation plus this.
_NORMALIZATION_EPSILON = 1e-8


@gin.configurable
def softmax_all_dims(t: tf.Tensor) -> tf.Tensor:
  """Softmax over all elements of `t` together (they sum to 1), in `t`'s shape."""
  return tf.reshape(tf.nn.softmax(tf.reshape(t, [-1])), tf.shape(t))


def _top_half_threshold(t: tf.Tensor) -> tf.Tensor:
  """The ceil(n/2)-th largest of the n elements of `t`."""
  flat = tf.reshape(t, [-1])
  k = (tf.size(flat) + 1) // 2
  return tf.math.top_k(flat, k=k, sorted=True).values[-1]


@gin.configurable
class AdvantagePreprocessor(tf.Module, logging_module.LoggingModule):
  """Normalizes, shifts and masks advantages before a policy loss uses them."""

  def __init__(self, normalize: bool = False, only_positive: bool = False,
               only_top_half: bool = False, offset: float | None = None,
               name: str = 'AdvantagePreprocessor'):
    """Creates the preprocessor; the steps run in the order of the arguments.

    Args:
      normalize: subtract the mean and divide by the standard deviation, both over all the
        elements of the call (of one replica under a distribution strategy).
      only_positive: keep only the (normalized, shifted) advantages above 0.
      only_top_half: keep only the largest half (ceil(n/2) of n; ties with the smallest kept
        one are kept too), as V-MPO does.
      offset: added to the (normalized) advantages before masking.
      name: module name.
    """
    super().__init__(name=name)
    self.normalize = normalize
    self.only_positive = only_positive
    self.only_top_half = only_top_half
    self.offset = offset

  def __call__(self, advantages: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Returns `(advantages, mask)`: float32 mask of the kept steps, 0 advantages elsewhere."""
    advantages = tf.convert_to_tensor(advantages, tf.float32)
    if self.normalize:
      mean, variance = tf.nn.moments(advantages, axes=list(range(advantages.shape.rank)))
      advantages = (advantages - mean) / (tf.sqrt(variance) + _NORMALIZATION_EPSILON)
    if self.offset is not None:
      advantages += tf.cast(self.offset, tf.float32)
    keep = tf.ones_like(advantages, tf.bool)
    if self.only_positive:
      keep = tf.logical_and(keep, advantages > 0.)
    if self.only_top_half:
      keep = tf.logical_and(keep, advantages >= _top_half_threshold(advantages))
    mask = tf.cast(keep, tf.float32)
    self.log('AdvantagePreprocessor/kept_fraction', tf.reduce_mean(mask))
    return tf.where(keep, advantages, tf.zeros_like(advantages)), mask


def _as_coefficient(value: None | float | constraints.Coefficient
                    ) -> constraints.Coefficient | None:
  """A float becomes a `FixedCoefficient`; coefficients and None stay as they are."""
  if value is None or isinstance(value, constraints.Coefficient):
    return value
  return constraints.FixedCoefficient(float(value))


def _normalized_kl_to_uniform(weights: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
  """KL(p || uniform over the kept steps) of the weights normalized to a distribution p."""
  p = tf.math.divide_no_nan(weights, tf.reduce_sum(weights))
  return tf.reduce_sum(tf.math.xlogy(p, p * tf.reduce_sum(mask)))


@gin.configurable
class GeneralizedAdvantagePolicyLoss(generalized_onpolicy_loss.PolicyLoss,
                                     logging_module.LoggingModule):
  """The mean over the steps of `loss_t = -log pi(a_t|x_t) * sg(w_t)`, the weights `w_t`
  derived from the advantages.

  In order: the advantages are preprocessed (normalized, masked), clipped at `max_advantage`,
  divided by the temperature and transformed (AWR: `exp`; V-MPO: a softmax over all kept
  steps); then PPO's clipping drops steps and the weights are multiplied by the importance
  weights `pi/mu` (clipped at `max_importance_weight`). Without any of that, `w_t = A_t`: the
  plain policy gradient.

  PPO: the gradient of the clipped surrogate `min(rho A, clip(rho, 1/(1+eps), 1+eps) A)` is
  `rho A grad log pi` where the clip is inactive and 0 where it is active (`A > 0` and
  `log rho > log(1+eps)`, or `A < 0` and `log rho < -log(1+eps)`), so the loss drops those steps
  and weighs the others by `rho` (`use_importance_weights`).

  With a transformation, the KL between the weights (normalized to a distribution) and the
  uniform distribution over the kept steps is the constrained quantity of the temperature: its
  `adjustment_loss` (0 for a fixed temperature) is added to the mean. V-MPO's temperature is a `LagrangeInequalityCoefficient` with threshold e_n.
  """

  def __init__(self, advantage_preprocessor: AdvantagePreprocessor | None = None,
               use_importance_weights: bool = False,
               max_importance_weight: float | None = None,
               ppo_epsilon: float | None = None, max_advantage: float | None = None,
               advantage_transformation: Transformation | None = None,
               temperature: None | float | constraints.Coefficient = None,
               name: str = 'GeneralizedAdvantagePolicyLoss'):
    """Creates the loss; see the class docstring for the order of the steps.

    Args:
      advantage_preprocessor: normalizes and masks the advantages (None: all kept as they are).
      use_importance_weights: multiply the weights by `pi(a|x) / mu(a|x)` (no gradient).
      max_importance_weight: clip of those importance weights (None: no clip); only together
        with `use_importance_weights`.
      ppo_epsilon: PPO's clipping epsilon (None: no clipping).
      max_advantage: the advantages are clipped to at most this before the temperature.
      advantage_transformation: elementwise map (or a map of the whole tensor, like
        `softmax_all_dims`) of the scaled advantages to weights. Steps the preprocessor masks
        out are given -inf, so that exponentials and softmaxes ignore them, and weight 0.
      temperature: divides the advantages; a float or a `constraints.Coefficient`.
      name: module name.
    """
    super().__init__(name=name)
    if max_importance_weight is not None and not use_importance_weights:
      raise ValueError('max_importance_weight needs use_importance_weights=True')
    if ppo_epsilon is not None and ppo_epsilon <= 0.:
      raise ValueError(f'ppo_epsilon must be positive, got {ppo_epsilon}')
    self.advantage_preprocessor = advantage_preprocessor
    self.use_importance_weights = use_importance_weights
    self.max_importance_weight = max_importance_weight
    self.ppo_epsilon = ppo_epsilon
    self.max_advantage = max_advantage
    self.advantage_transformation = advantage_transformation
    self.temperature = _as_coefficient(temperature)

  def init(self) -> None:
    """Creates the temperature's variables, if it has any."""
    if self.temperature is not None:
      self.temperature.init()

  def _log_mean(self, key: str, tensor: tf.Tensor) -> None:
    self.log(f'GeneralizedAdvantagePolicyLoss/{key}', tf.reduce_mean(tensor))

  def _transform(self, advantages: tf.Tensor, mask: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Weights of the kept steps from their advantages, and the temperature's adjustment loss."""
    if self.max_advantage is not None:
      advantages = tf.minimum(advantages, tf.cast(self.max_advantage, tf.float32))
    if self.temperature is not None:
      temperature = tf.stop_gradient(self.temperature.value)
      self._log_mean('temperature', temperature)
      advantages /= temperature
    kept = mask > 0.
    if self.advantage_transformation is None:
      return tf.where(kept, advantages, tf.zeros_like(advantages)), tf.constant(0.)
    masked = tf.where(kept, advantages, tf.fill(tf.shape(advantages), -math.inf))
    weights = tf.where(kept, self.advantage_transformation(masked), tf.zeros_like(advantages))
    kl = _normalized_kl_to_uniform(weights, mask)
    self._log_mean('weights_kl', kl)
    adjustment = (tf.constant(0.) if self.temperature is None
                  else self.temperature.adjustment_loss(kl))
    return weights, adjustment

  def _ppo_keep(self, advantages: tf.Tensor, log_rhos: tf.Tensor) -> tf.Tensor:
    """1 where PPO's clipped surrogate has a gradient, 0 where its clip is active."""
    bound = math.log1p(self.ppo_epsilon)
    clipped = tf.logical_or(tf.logical_and(advantages > 0., log_rhos > bound),
                            tf.logical_and(advantages < 0., log_rhos < -bound))
    self._log_mean('ppo_clipped_fraction', tf.cast(clipped, tf.float32))
    return 1. - tf.cast(clipped, tf.float32)

  def _importance_weights(self, log_rhos: tf.Tensor) -> tf.Tensor:
    if self.max_importance_weight is not None:
      log_rhos = tf.minimum(log_rhos, math.log(self.max_importance_weight))
    return tf.exp(log_rhos)

  def __call__(self, advantages: tf.Tensor, target_action_log_probs: tf.Tensor,
               behaviour_action_log_probs: tf.Tensor, actions: tf.Tensor | None = None,
               target_logits: tf.Tensor | None = None,
               behaviour_logits: tf.Tensor | None = None,
               parametric_action_distribution: Any = None) -> tf.Tensor:
    """The scalar mean loss over the `[T, B]` steps.

    Only `target_action_log_probs` gets a gradient (and the temperature, through its
    adjustment loss). `actions`, the logits and the distribution are part of the policy
    losses' calling convention (`generalized_onpolicy_loss.PolicyLoss`); these losses need
    only the log-probabilities.
    """
    del actions, target_logits, behaviour_logits, parametric_action_distribution
    advantages = tf.stop_gradient(tf.convert_to_tensor(advantages, tf.float32))
    target_action_log_probs = tf.convert_to_tensor(target_action_log_probs, tf.float32)
    log_rhos = tf.stop_gradient(
        target_action_log_probs - tf.convert_to_tensor(behaviour_action_log_probs, tf.float32))
    self._log_mean('advantages', advantages)
    self._log_mean('log_rho', log_rhos)
    if self.advantage_preprocessor is not None:
      advantages, mask = self.advantage_preprocessor(advantages)
    else:
      mask = tf.ones_like(advantages)
    weights, adjustment_loss = self._transform(advantages, mask)
    if self.ppo_epsilon is not None:
      weights *= self._ppo_keep(advantages, log_rhos)
    if self.use_importance_weights:
      importance_weights = self._importance_weights(log_rhos)
      self._log_mean('importance_weights', importance_weights)
      weights *= importance_weights
    self._log_mean('weights', weights)
    loss = tf.reduce_mean(-target_action_log_probs * tf.stop_gradient(weights)) + adjustment_loss
    self.log('GeneralizedAdvantagePolicyLoss/loss', loss)
    return loss


@gin.configurable
def pg() -> GeneralizedAdvantagePolicyLoss:
  """The plain policy gradient `-log pi * A`."""
  return GeneralizedAdvantagePolicyLoss()


@gin.configurable
def vtrace(max_importance_weight: float | None = 1.) -> GeneralizedAdvantagePolicyLoss:
  """IMPALA's policy gradient `-log pi * min(pi/mu, max_importance_weight) * A`."""
  return GeneralizedAdvantagePolicyLoss(use_importance_weights=True,
                                        max_importance_weight=max_importance_weight)


@gin.configurable
def ppo(epsilon: float, normalize_advantages: bool = False,
        advantage_offset: float | None = None) -> GeneralizedAdvantagePolicyLoss:
  """PPO's clipped surrogate (Schulman et al. 2017), as its gradient (see the loss class)."""
  preprocessor = None
  if normalize_advantages or advantage_offset is not None:
    preprocessor = AdvantagePreprocessor(normalize=normalize_advantages,
                                         offset=advantage_offset)
  return GeneralizedAdvantagePolicyLoss(advantage_preprocessor=preprocessor,
                                        use_importance_weights=True, ppo_epsilon=epsilon)


@gin.configurable
def awr(beta: float, w_max: float) -> GeneralizedAdvantagePolicyLoss:
  """Advantage-weighted regression (Peng et al. 2019): `w = min(exp(A / beta), w_max)`."""
  return GeneralizedAdvantagePolicyLoss(advantage_transformation=tf.exp, temperature=beta,
                                        max_advantage=beta * math.log(w_max))


@gin.configurable
def bc_logp() -> GeneralizedAdvantagePolicyLoss:
  """Behaviour cloning `-log pi(a|x)`: every action of the data weighted 1."""
  return GeneralizedAdvantagePolicyLoss(advantage_transformation=tf.ones_like)


@gin.configurable
def repeat_positive_advantages() -> GeneralizedAdvantagePolicyLoss:
  """Behaviour cloning of the actions whose advantage is positive (weight 1, others 0)."""
  return GeneralizedAdvantagePolicyLoss(
      advantage_preprocessor=AdvantagePreprocessor(only_positive=True),
      advantage_transformation=tf.ones_like)


def _softmax_times_size(t: tf.Tensor) -> tf.Tensor:
  """`softmax_all_dims(t) * size(t)`: the loss's mean over the steps is then the weighted sum."""
  return softmax_all_dims(t) * tf.cast(tf.size(t), tf.float32)


@gin.configurable
def vmpo(e_n: float) -> GeneralizedAdvantagePolicyLoss:
  """V-MPO's policy loss (Song et al. 2019) with its temperature kept to KL <= e_n.

  The weights are `psi = softmax(A / eta)` over the top half of the advantages, scaled by the
  number of steps so that the loss's mean over the steps is V-MPO's `-sum psi log pi`. The temperature's
  variable is created by `init()` (inside the distribution strategy's scope).
  """
  return GeneralizedAdvantagePolicyLoss(
      advantage_preprocessor=AdvantagePreprocessor(only_top_half=True),
      advantage_transformation=_softmax_times_size,
      temperature=constraints.LagrangeInequalityCoefficient(threshold=e_n,
                                                            init_variables=False))
