"""Optimizers the entry points share."""

from typing import Any, Callable, Tuple

import tensorflow as tf


def linear_decay(learning_rate: float, decay_multiplier: float,
                 final_iteration: int) -> Callable[[Any], Any]:
  """The rate decaying linearly from `learning_rate` to `learning_rate * decay_multiplier` over
  `final_iteration` steps, then staying there (constant when the multiplier is 1)."""
  if decay_multiplier == 1:
    return lambda iteration: learning_rate
  return tf.keras.optimizers.schedules.PolynomialDecay(
      learning_rate, max(final_iteration, 1), learning_rate * decay_multiplier)


def adam_with_linear_decay(learning_rate: float, decay_multiplier: float, final_iteration: int,
                           **adam_kwargs: Any) -> Tuple[Any, Callable[[Any], Any]]:
  """`(Adam, learning_rate_fn)` with the rate of `linear_decay`."""
  learning_rate_fn = linear_decay(learning_rate, decay_multiplier, final_iteration)
  rate = learning_rate if decay_multiplier == 1 else learning_rate_fn
  return tf.keras.optimizers.Adam(rate, **adam_kwargs), learning_rate_fn
