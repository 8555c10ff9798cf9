"""Helpers on nests of tensors: time-major layout and splitting along time."""

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
