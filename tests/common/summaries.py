"""Reads TensorBoard event files back for assertions."""

import collections
import pathlib

import tensorflow as tf
from tensorflow.core.util import event_pb2


def read_scalars(logdir) -> dict:
  """{tag: [(step, value), ...]} of every scalar summary in the event files under `logdir`."""
  scalars = collections.defaultdict(list)
  for path in sorted(pathlib.Path(logdir).rglob('events.out.tfevents.*')):
    for record in tf.data.TFRecordDataset(str(path)):
      event = event_pb2.Event.FromString(record.numpy())
      for value in event.summary.value:
        scalars[value.tag].append((event.step, float(tf.make_ndarray(value.tensor))))
  return scalars
