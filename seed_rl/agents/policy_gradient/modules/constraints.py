"""Coefficients of loss terms: fixed ones, and Lagrange multipliers that enforce a constraint.

A `Coefficient` weighs a loss term in two ways:
- `scale_loss(loss)`: the term's contribution to the loss the networks minimize, with the
  coefficient held constant;
- `adjustment_loss(x)`: a loss whose gradient adjusts the coefficient itself (and nothing else).

`LagrangeInequalityCoefficient(threshold)` turns the constraint `mean(x) <= threshold` into a
penalty whose weight grows while the constraint is violated and shrinks while it holds (dual
gradient descent), as V-MPO does for its KL constraints and SAC for its entropy.
"""

import abc
import math

import gin
import tensorflow as tf


class Coefficient(tf.Module, metaclass=abc.ABCMeta):
  """A non-negative weight of a loss term; subclasses say whether and how it adapts."""

  def init(self) -> None:
    """Creates the coefficient's variables, if any (call inside the strategy's scope)."""

  @property
  @abc.abstractmethod
  def value(self) -> tf.Tensor:
    """The current coefficient, a float32 scalar."""

  def scale_loss(self, loss: tf.Tensor) -> tf.Tensor:
    """`loss` weighted by the coefficient; no gradient reaches the coefficient."""
    return tf.stop_gradient(self.value) * loss

  @abc.abstractmethod
  def adjustment_loss(self, x: tf.Tensor) -> tf.Tensor:
    """A scalar loss whose gradient adjusts the coefficient given the constrained `x`."""


@gin.configurable
class FixedCoefficient(Coefficient):
  """A constant coefficient: `adjustment_loss` is 0."""

  def __init__(self, value: float, name: str = 'FixedCoefficient'):
    super().__init__(name=name)
    self._value = tf.constant(value, tf.float32)

  @property
  def value(self) -> tf.Tensor:
    return self._value

  def adjustment_loss(self, x: tf.Tensor) -> tf.Tensor:
    del x
    return tf.constant(0., tf.float32)


def _clip_with_gradient_back_into_range(x: tf.Tensor, low: float, high: float) -> tf.Tensor:
  """`clip(x, low, high)` whose gradient is kept wherever a descent step moves x toward the range.

  A plain clip has no gradient outside the range, so a variable that once left it would stay
  stuck there; the identity's gradient would let it drift arbitrarily far away. Here the
  gradient is dropped only where it would push x further out.
  """

  @tf.custom_gradient
  def clip(x):
    def grad(dy):
      pushes_out = tf.logical_or(tf.logical_and(x >= high, dy < 0.),
                                 tf.logical_and(x <= low, dy > 0.))
      return tf.where(pushes_out, tf.zeros_like(dy), dy)

    return tf.clip_by_value(x, low, high), grad

  return clip(x)


@gin.configurable
class LagrangeInequalityCoefficient(Coefficient):
  """Lagrange multiplier `alpha >= 0` of the constraint `mean(x) <= threshold`.

  `alpha = exp(adjustment_speed * param)` for a trainable scalar `param`, kept within
  `alpha_range`. Minimizing `adjustment_loss(x) = alpha * sg(threshold - mean(x))` raises alpha
  while `mean(x)` exceeds the threshold and lowers it otherwise; `adjustment_speed` scales how
  fast (in log space) it moves for a given learning rate.
  """

  def __init__(self, threshold: float, init_alpha: float = 1.,
               alpha_range: tuple[float, float] = (1e-6, 1e6), adjustment_speed: float = 1.,
               init_variables: bool = True, name: str = 'LagrangeInequalityCoefficient'):
    """Creates the coefficient.

    Args:
      threshold: the bound on `mean(x)`.
      init_alpha: the coefficient's initial value, within `alpha_range`.
      alpha_range: `(min, max)` of the coefficient, both positive.
      adjustment_speed: factor of the parametrization (see the class docstring).
      init_variables: create the variable now; False leaves it to `init()`, e.g. so that it is
        created inside a distribution strategy's scope.
      name: module name.
    """
    super().__init__(name=name)
    low, high = alpha_range
    if not 0. < low <= init_alpha <= high:
      raise ValueError(f'Need 0 < alpha_range[0] <= init_alpha <= alpha_range[1], got '
                       f'init_alpha={init_alpha} and alpha_range={alpha_range}')
    if adjustment_speed <= 0.:
      raise ValueError(f'adjustment_speed must be positive, got {adjustment_speed}')
    self.threshold = float(threshold)
    self._init_alpha = float(init_alpha)
    self._speed = float(adjustment_speed)
    self._param_range = (math.log(low) / self._speed, math.log(high) / self._speed)
    self._param: tf.Variable | None = None
    if init_variables:
      self.init()

  def init(self) -> None:
    """Creates the trainable parameter once; later calls do nothing."""
    if self._param is None:
      self._param = tf.Variable(math.log(self._init_alpha) / self._speed, dtype=tf.float32,
                                trainable=True, name='lagrange_param')

  @property
  def value(self) -> tf.Tensor:
    if self._param is None:
      raise ValueError(f'{self.name}: call init() before using the coefficient '
                       '(it was created with init_variables=False)')
    param = _clip_with_gradient_back_into_range(tf.convert_to_tensor(self._param),
                                                *self._param_range)
    return tf.exp(self._speed * param)

  def adjustment_loss(self, x: tf.Tensor) -> tf.Tensor:
    violation = self.threshold - tf.reduce_mean(tf.cast(x, tf.float32))
    return self.value * tf.stop_gradient(violation)
