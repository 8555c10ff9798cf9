"""Regularizers of the policy: KL to the acting policy (both ways), KL to a reference, entropy.

A regularizer is a `generalized_onpolicy_loss.RegularizationLoss`, called as
`regularizer(parametric_action_distribution, target_action_logits, behaviour_action_logits,
actions)` on `[T, B, ...]` policy parameters and returns `(per_step_loss [T, B], global_loss)`:
the per-step loss is averaged into the networks' loss (or subtracted from the rewards), the
global scalar adjusts the coefficients (Lagrange multipliers) and is added to the loss as is.
"""

from collections.abc import Callable

import gin
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import constraints
from seed_rl.agents.policy_gradient.modules import generalized_onpolicy_loss
from seed_rl.common import parametric_distribution as pd
from seed_rl.common.training import logging_module


def _kl_pi_mu(dist: pd.ParametricDistribution, target: tf.Tensor, behaviour: tf.Tensor
              ) -> tf.Tensor:
  """KL(pi || mu): how far the learned policy moved from the one that acted."""
  return dist.kl_divergence(target, behaviour)


def _kl_mu_pi(dist: pd.ParametricDistribution, target: tf.Tensor, behaviour: tf.Tensor
              ) -> tf.Tensor:
  """KL(mu || pi), the direction of MPO's and V-MPO's trust region."""
  return dist.kl_divergence(behaviour, target)


def _negative_entropy(dist: pd.ParametricDistribution, target: tf.Tensor,
                      behaviour: tf.Tensor) -> tf.Tensor:
  """-H(pi): minimizing it keeps the policy exploring."""
  del behaviour
  return -dist.entropy(target)


def _kl_ref_pi(dist: pd.ParametricDistribution, target: tf.Tensor, behaviour: tf.Tensor
               ) -> tf.Tensor:
  """KL(ref || pi), ref the distribution of all-zero parameters (e.g. uniform, or N(0, s))."""
  del behaviour
  return dist.kl_divergence(tf.zeros_like(target), target)


# Name of each regularization term -> the term per step, minimized with its coefficient.
TERMS: dict[str, Callable[..., tf.Tensor]] = {
    'kl_pi_mu': _kl_pi_mu,
    'kl_mu_pi': _kl_mu_pi,
    'entropy': _negative_entropy,
    'kl_ref_pi': _kl_ref_pi,
}


@gin.configurable
class KLPolicyRegularizer(generalized_onpolicy_loss.RegularizationLoss,
                          logging_module.LoggingModule):
  """Weighted sum of the terms in `TERMS`, each with its own coefficient.

  `KLPolicyRegularizer(kl_mu_pi=LagrangeInequalityCoefficient(0.01), entropy=1e-3)`
  penalizes `alpha * KL(mu || pi)` with alpha keeping the mean KL at most 0.01, and
  `1e-3 * -H(pi)`. Floats become `FixedCoefficient`s; None leaves the term out. Note that the
  `entropy` term is the negative entropy: a Lagrange coefficient on it keeps the mean entropy at
  least `-threshold`.
  """

  def __init__(self, **coefficients: None | float | constraints.Coefficient):
    super().__init__(name='KLPolicyRegularizer')
    unknown = sorted(set(coefficients) - set(TERMS))
    if unknown:
      raise ValueError(f'Unknown regularization terms {unknown}; known: {sorted(TERMS)}')
    self.coefficients = {
        key: (value if isinstance(value, constraints.Coefficient)
              else constraints.FixedCoefficient(float(value)))
        for key, value in sorted(coefficients.items()) if value is not None
    }

  def init(self) -> None:
    """Creates the coefficients' variables (Lagrange multipliers), if any."""
    for coefficient in self.coefficients.values():
      coefficient.init()

  def __call__(self, parametric_action_distribution: pd.ParametricDistribution,
               target_action_logits: tf.Tensor, behaviour_action_logits: tf.Tensor,
               actions: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """Returns `(per_step_loss [T, B], global_loss)`.

    Args:
      parametric_action_distribution: the policy's action distribution.
      target_action_logits: `[T, B, param_size]` parameters of the learned policy pi.
      behaviour_action_logits: `[T, B, param_size]` parameters of the acting policy mu (no
        gradient reaches them).
      actions: unused; part of the regularizers' calling convention.
    """
    del actions
    target = tf.convert_to_tensor(target_action_logits, tf.float32)
    behaviour = tf.stop_gradient(tf.convert_to_tensor(behaviour_action_logits, tf.float32))
    per_step_loss = tf.zeros_like(target[..., 0])
    global_loss = tf.constant(0., tf.float32)
    for key, coefficient in self.coefficients.items():
      term = TERMS[key](parametric_action_distribution, target, behaviour)
      self.log(f'KLPolicyRegularizer/{key}', tf.reduce_mean(term))
      self.log(f'KLPolicyRegularizer/{key}_coefficient', tf.stop_gradient(coefficient.value))
      per_step_loss += coefficient.scale_loss(term)
      global_loss += coefficient.adjustment_loss(term)
    return per_step_loss, global_loss
