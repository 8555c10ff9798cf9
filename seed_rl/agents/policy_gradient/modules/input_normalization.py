"""Input (observation) normalization that never changes what the model does.

Inputs are normalized with the running mean `m` and std `s` of a
`running_statistics.MeanStd` tracker, `(x - m) / s`, and then pass through a
trainable per-dimension affine map, the correction `y -> a * y + b`, before
they reach the model. Whenever the statistics change to `(m', s')`, `a` and
`b` change so that
    a * (x - m) / s + b == a' * (x - m') / s' + b'    for every x:
updating the statistics leaves the policy and the value function exactly as
they were, while gradients still see well-scaled inputs.

Use: `init_normalization_stats(size)` once (inside the strategy scope); per
training step `update_normalization_statistics(inputs)`; in the model
`correct(normalize(x))`, optionally clipping the normalized values in
between.

A change of the statistics or of the correction whose result is not finite is
refused and counted (`update_gate`): the old values stay.
"""

import gin
import tensorflow as tf

from seed_rl.common.training import running_statistics
from seed_rl.common.training import update_gate


@gin.configurable
class InputNormalization(tf.Module):
  """Normalizes inputs with tracked statistics and a trainable correction."""

  def __init__(self, mean_std_tracker: running_statistics.MeanStd):
    """Creates the module; `init_normalization_stats` creates its variables.

    Args:
      mean_std_tracker: Uninitialized `MeanStd` tracking the inputs.

    Raises:
      ValueError: If `mean_std_tracker` is not a MeanStd.
    """
    super().__init__(name='InputNormalization')
    if not isinstance(mean_std_tracker, running_statistics.MeanStd):
      raise ValueError('mean_std_tracker needs to be a running_statistics.'
                       f'MeanStd, got {type(mean_std_tracker).__name__}')
    self.mean_std_tracker = mean_std_tracker
    self.compensation_mean = None
    self.compensation_std = None

  @property
  def initialized(self) -> bool:
    return self.compensation_mean is not None

  def init_normalization_stats(self, input_size: int) -> None:
    """Creates the variables for inputs of shape `[..., input_size]`.

    Call it inside the strategy scope of the model. A second call with the
    same size does nothing; another size is a ValueError.
    """
    self.mean_std_tracker.init(input_size)  # Checks the size.
    if self.initialized:
      return
    with self.name_scope:
      # MEAN aggregation: gradients and the (identical) statistics updates
      # of all replicas are averaged.
      self.compensation_mean = tf.Variable(
          tf.zeros([input_size]), name='compensation_mean', trainable=True,
          aggregation=tf.VariableAggregation.MEAN)
      self.compensation_std = tf.Variable(
          tf.ones([input_size]), name='compensation_std', trainable=True,
          aggregation=tf.VariableAggregation.MEAN)
      self._refused = update_gate.RefusedUpdates(
          'input normalization compensation updates')

  def normalize(self, x: tf.Tensor) -> tf.Tensor:
    """Returns `(x - m) / s` for `x` of shape `[..., input_size]`."""
    self._check_initialized()
    return self.mean_std_tracker.normalize(x)

  def correct(self, x: tf.Tensor) -> tf.Tensor:
    """Applies the correction `a * x + b` to normalized inputs `x`."""
    self._check_initialized()
    return self.compensation_std * x + self.compensation_mean

  def update_normalization_statistics(self, data: tf.Tensor) -> None:
    """Adds inputs `data` (`[..., input_size]`) to the statistics.

    Adjusts the correction so that `correct(normalize(x))` is the same
    before and after, for every x.
    """
    self._check_initialized()
    old_mean, old_std = self.mean_std_tracker.get_mean_std()
    applied = self.mean_std_tracker.update(data)
    new_mean, new_std = self.mean_std_tracker.get_mean_std()
    scale = self.compensation_std.read_value()
    offset = self.compensation_mean.read_value()
    update_gate.assign_if_finite(self._refused, [
        (self.compensation_std, scale * new_std / old_std),
        (self.compensation_mean, offset + scale * (new_mean - old_mean) / old_std),
    ], wanted=applied)

  def get_mean_std(self) -> running_statistics.MeanAndStd:
    """The tracker's current `(mean, std)`."""
    return self.mean_std_tracker.get_mean_std()

  def _check_initialized(self) -> None:
    if not self.initialized:
      raise ValueError('InputNormalization is not initialized: call '
                       'init_normalization_stats(size) first (inside the '
                       'strategy scope)')
