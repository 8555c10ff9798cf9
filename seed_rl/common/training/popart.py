"""PopArt normalization of value targets (van Hasselt et al., 2016).

Value targets are learned in normalized form, `(target - m) / s`, with the
mean `m` and std `s` of past targets from a `running_statistics.MeanStd`
tracker, so the value loss keeps the same scale whatever the reward scale.

Unlike the paper, the last layer of the value network is left alone: the
module owns a trainable affine map `x -> a * x + b` (the compensation), and
the network's output `x` means the value `s * (a * x + b) + m`. Whenever the
statistics change from `(m, s)` to `(m', s')`, `a` and `b` change so that
    s * (a * x + b) + m == s' * (a' * x + b') + m'    for every x,
i.e. the update of the statistics never changes a value prediction.

Use per training step:
1. `correct_prediction` then `unnormalize_prediction` on the network's values
   gives the values used to compute targets and advantages;
2. the value loss compares `correct_prediction(prediction)` with
   `normalize_target(targets)`, the policy loss uses
   `normalize_advantage(advantages)`;
3. the optimizer may train the compensation (`trainable_variables`);
4. `update_normalization_statistics(targets)` folds the targets into the
   statistics and adjusts the compensation.

Neither the statistics nor the compensation ever take a non-finite value: an
update of either whose result would not be finite is refused (the old values
stay) and counted (`update_gate`); the compensation changes only with the
statistics it compensates.
"""

import gin
import tensorflow as tf

from seed_rl.common.training import logging_module
from seed_rl.common.training import running_statistics
from seed_rl.common.training import update_gate


def _compensation(name: str, initial_value: tf.Tensor) -> tf.Variable:
  """A trainable compensation parameter.

  MEAN aggregation: gradients and the (identical) statistics updates of all
  replicas are averaged.
  """
  return tf.Variable(initial_value, name=name, trainable=True,
                     aggregation=tf.VariableAggregation.MEAN)


class IdentityNormalizer:
  """PopArt's interface doing nothing: values are learned unnormalized (a loss without PopArt)."""

  def correct_prediction(self, x: tf.Tensor) -> tf.Tensor:
    return x

  def unnormalize_prediction(self, x: tf.Tensor) -> tf.Tensor:
    return x

  def normalize_target(self, x: tf.Tensor) -> tf.Tensor:
    return x

  def normalize_advantage(self, x: tf.Tensor) -> tf.Tensor:
    return x

  def update_normalization_statistics(self, data: tf.Tensor) -> None:
    del data


@gin.configurable
class PopArt(tf.Module, logging_module.LoggingModule):
  """Normalizes value targets and keeps value predictions invariant.

  Logs `PopArt/mean` and `PopArt/std` (scalars, after the update) in
  `update_normalization_statistics`.
  """

  def __init__(self, mean_std_tracker: running_statistics.MeanStd,
               compensate: bool = True):
    """Creates the module; `init()` creates its variables.

    Args:
      mean_std_tracker: Uninitialized `MeanStd` tracking the targets.
      compensate: Whether to keep the trainable compensation. Without it
        `correct_prediction` is the identity and a change of the statistics
        changes the implied values.

    Raises:
      ValueError: If `mean_std_tracker` is not a MeanStd.
    """
    super().__init__(name='PopArt')
    if not isinstance(mean_std_tracker, running_statistics.MeanStd):
      raise ValueError('mean_std_tracker needs to be a running_statistics.'
                       f'MeanStd, got {type(mean_std_tracker).__name__}')
    self.mean_std_tracker = mean_std_tracker
    self.compensate = compensate
    self.compensation_mean = None
    self.compensation_std = None
    self._refused = None
    self._initialized = False

  @property
  def initialized(self) -> bool:
    return self._initialized

  def init(self) -> None:
    """Creates the variables; call it inside the training strategy's scope.

    Takes no argument, so a loss can initialize all of its submodules with
    zero-argument `init()` calls. Later calls do nothing.
    """
    if self._initialized:
      return
    self.mean_std_tracker.init(1)
    if self.compensate:
      with self.name_scope:
        self.compensation_mean = _compensation('compensation_mean',
                                               tf.zeros([]))
        self.compensation_std = _compensation('compensation_std', tf.ones([]))
      self._refused = update_gate.RefusedUpdates('PopArt compensation updates')
    self._initialized = True

  def normalize_target(self, x: tf.Tensor) -> tf.Tensor:
    """Returns `(x - m) / s` for value targets `x` of any shape."""
    self._check_initialized()
    x = tf.convert_to_tensor(x)
    return tf.squeeze(self.mean_std_tracker.normalize(x[..., tf.newaxis]), -1)

  def normalize_advantage(self, x: tf.Tensor) -> tf.Tensor:
    """Returns `x / s`: advantages are differences of values, so `m` cancels.
    """
    self._check_initialized()
    x = tf.convert_to_tensor(x)
    _, std = self.mean_std_tracker.get_mean_std()
    return x / tf.cast(std[0], x.dtype)

  def correct_prediction(self, x: tf.Tensor) -> tf.Tensor:
    """Applies the compensation `a * x + b` to network outputs `x`."""
    self._check_initialized()
    if not self.compensate:
      return x
    return self.compensation_std * x + self.compensation_mean

  def unnormalize_prediction(self, x: tf.Tensor) -> tf.Tensor:
    """Returns `s * x + m`: corrected predictions back in reward units."""
    self._check_initialized()
    x = tf.convert_to_tensor(x)
    return tf.squeeze(
        self.mean_std_tracker.unnormalize(x[..., tf.newaxis]), -1)

  # Plural spellings of the same operations.
  normalize_targets = normalize_target
  normalize_advantages = normalize_advantage

  def update_normalization_statistics(self, data: tf.Tensor) -> None:
    """Adds value targets `data` (any shape) to the statistics.

    Adjusts the compensation so that `unnormalize_prediction(
    correct_prediction(x))` is the same before and after, for every x. A
    refused update of the statistics leaves the compensation as it is; a
    compensation that would not be finite is refused and counted (the
    statistics then stay updated: values remain finite).
    """
    self._check_initialized()
    data = tf.cast(data, tf.float32)
    old_mean, old_std = self.mean_std_tracker.get_mean_std()
    statistics_changed = self.mean_std_tracker.update(data[..., tf.newaxis])
    new_mean, new_std = self.mean_std_tracker.get_mean_std()
    old_mean, old_std, new_mean, new_std = (
        old_mean[0], old_std[0], new_mean[0], new_std[0])
    self.log('PopArt/mean', new_mean)
    self.log('PopArt/std', new_std)
    if self.compensate:
      scale = self.compensation_std.read_value()
      offset = self.compensation_mean.read_value()
      update_gate.assign_if_finite(
          self._refused,
          [(self.compensation_std, old_std / new_std * scale),
           (self.compensation_mean,
            (old_std * offset + old_mean - new_mean) / new_std)],
          wanted=statistics_changed)

  def _check_initialized(self) -> None:
    if not self._initialized:
      raise ValueError('PopArt is not initialized: call init() first (inside '
                       'the strategy scope)')
