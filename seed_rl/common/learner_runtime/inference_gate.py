"""A gate that holds inference back while a training step runs: acting never overlaps learning.

An on-policy agent (PPO's `block_inference_on_training`) wants every unroll of its next batch
acted by the weights its last training step produced. One token circulates: inference takes it
around the policy's computation only (not while it waits for room in the unroll queue, which
the training step empties first), and the training step takes it once it has its batch, so
neither can wait for the other forever.
"""

import contextlib
from typing import Any, Callable, Iterator

import tensorflow as tf


class InferenceGate(tf.Module):
  """`around(fn)` in the inference tf.function; `with gate.closed():` around a training step."""

  def __init__(self):
    super().__init__(name='inference_gate')
    self._token = tf.queue.FIFOQueue(1, [tf.int32], shapes=[[]], name='inference_gate')
    self._token.enqueue(0)

  def around(self, fn: Callable[[], Any]) -> Any:
    """`fn()`, computed while holding the token (waits while a training step holds it)."""
    token = self._token.dequeue()
    with tf.control_dependencies([token]):
      result = tf.nest.map_structure(tf.identity, fn())
    with tf.control_dependencies(tf.nest.flatten(result)):
      release = self._token.enqueue(token)
    with tf.control_dependencies([release]):
      return tf.nest.map_structure(tf.identity, result)

  @contextlib.contextmanager
  def closed(self) -> Iterator[None]:
    """Holds the token for the body (eagerly): inference waits until it is given back."""
    token = self._token.dequeue()
    try:
      yield
    finally:
      self._token.enqueue(token)
