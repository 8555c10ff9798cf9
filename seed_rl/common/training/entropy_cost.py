"""The trainable entropy cost of the actor-critic agents (V-trace, SAC)."""

import math

import tensorflow as tf


class EntropyCost(tf.Module):
  """Trainable entropy cost `exp(m * param)`, `m` the adjustment speed.

  Parametrised in log space so that adapting it (with `target_entropy`) is scale-free; the
  optimizer keeps `param` within [-20/m, 20/m] after every update.
  """

  def __init__(self, initial_cost: float, adjustment_speed: float):
    super().__init__(name='entropy_cost')
    self._speed = adjustment_speed
    bound = 20. / adjustment_speed
    self.param = tf.keras.Variable(math.log(initial_cost) / adjustment_speed, dtype='float32',
                                   name='entropy_cost_param')
    self.param.constraint = lambda value: tf.clip_by_value(value, -bound, bound)

  @tf.autograph.experimental.do_not_convert
  def __call__(self):
    return tf.exp(self._speed * tf.convert_to_tensor(self.param))
