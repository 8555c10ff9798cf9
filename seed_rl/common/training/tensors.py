"""Helpers on nests of tensors: time-major layout, splitting along time, selecting rows, updates
run only when needed, variables per spec."""

from typing import Any, Callable

import tensorflow as tf


@tf.autograph.experimental.do_not_convert
def make_time_major(x):
  """Swaps the first two dimensions of every tensor of rank >= 2 (batch-major <-> time-major)."""

  def transpose(t):
    t = tf.convert_to_tensor(t)
    if t.shape.rank is not None and t.shape.rank < 2:
      return t
    perm = tf.concat([[1, 0], tf.range(2, tf.rank(t))], axis=0)
    result = tf.transpose(t, perm)
    if t.shape.rank is not None:
      dims = t.shape.as_list()
      result.set_shape([dims[1], dims[0]] + dims[2:])
    return result

  return tf.nest.map_structure(transpose, x)


@tf.autograph.experimental.do_not_convert
def split_structure(structure, prefix_length: int, axis: int = 0):
  """Splits every leaf into `[:prefix_length]` and `[prefix_length:]` along `axis`."""
  pairs = [tf.split(t, [prefix_length, -1], axis=axis) for t in tf.nest.flatten(structure)]
  prefix = tf.nest.pack_sequence_as(structure, [pair[0] for pair in pairs])
  suffix = tf.nest.pack_sequence_as(structure, [pair[1] for pair in pairs])
  return prefix, suffix


@tf.autograph.experimental.do_not_convert
def select_rows(structure, mask):
  """The rows of every leaf (`[N, ...]`) where `<bool>[N]` `mask` is True, in order.

  What `tf.boolean_mask` of each leaf gives, with the mask's positions found once: a gather per
  leaf instead of a dozen shape and slice ops each (the learner's inference function, run for
  every batch of actor steps, selects rows of several nests).
  """
  rows = tf.reshape(tf.where(mask), [-1])
  return tf.nest.map_structure(lambda t: tf.gather(t, rows), structure)


@tf.autograph.experimental.do_not_convert
def run_if_any(values, fn: Callable[[], Any]) -> None:
  """Runs `fn` (state updates, in a graph as eagerly) only when `values`, a `[N]` tensor, has an
  element (of booleans: one that is True), so that a rare case's ops are skipped in the usual
  one."""
  values = tf.convert_to_tensor(values)
  any_element = tf.reduce_any(values) if values.dtype == tf.bool else tf.size(values) > 0

  def run():
    fn()
    return tf.constant(True)

  tf.cond(any_element, run, lambda: tf.constant(False))


def empty_rows(specs):
  """A nest of zero-row tensors `[0, *spec.shape]` matching `specs` (TensorSpecs)."""
  return tf.nest.map_structure(lambda spec: tf.zeros([0] + spec.shape.as_list(), spec.dtype),
                               specs)


class _Structure(object):
  """Holds a nest without tf.Module's tracking, which would turn its tuples into wrappers
  (Keras 3 rejects those as call arguments)."""

  def __init__(self, nest):
    self.nest = nest


def create_variables(specs, leading_dims):
  """(flat list of zero variables `[*leading_dims, *spec.shape]`, structure of `specs`)."""
  variables = [tf.Variable(tf.zeros(list(leading_dims) + spec.shape.as_list(), spec.dtype),
                           trainable=False, name=spec.name)
               for spec in tf.nest.flatten(specs)]
  return variables, _Structure(tf.nest.map_structure(lambda _: None, specs))
