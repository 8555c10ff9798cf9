"""Optimizers the entry points share."""

from typing import Any, Callable, Tuple

import tensorflow as tf


def adam_with_linear_decay(learning_rate: float, decay_multiplier: float, final_iteration: int,
                           **adam_kwargs: Any) -> Tuple[Any, Callable[[Any], Any]]:
  """`(Adam, learning_rate_fn)`: the rate decays linearly from `learning_rate` to
  `learning_rate * decay_multiplier` over `final_iteration` steps, then stays there (constant
  when the multiplier is 1)."""
  if decay_multiplier == 1:
    learning_rate_fn = lambda iteration: learning_rate
    return tf.keras.optimizers.Adam(learning_rate, **adam_kwargs), learning_rate_fn
  learning_rate_fn = tf.keras.optimizers.schedules.PolynomialDecay(
      learning_rate, max(final_iteration, 1), learning_rate * decay_multiplier)
  return tf.keras.optimizers.Adam(learning_rate_fn, **adam_kwargs), learning_rate_fn
