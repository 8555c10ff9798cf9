"""Tests of seed_rl.common.learner_runtime.queues."""

import threading

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import structures
from seed_rl.common.learner_runtime import queues

pytestmark = pytest.mark.timeout(120)


def test_structured_fifo_queue_round_trips_nests_and_blocks_when_full():
  specs = structures.EnvOutput(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.bool),
                          tf.TensorSpec([2], tf.uint8), tf.TensorSpec([], tf.bool),
                          tf.TensorSpec([], tf.int32))
  queue = queues.StructuredFIFOQueue(1, specs)
  item = structures.EnvOutput(1.5, True, np.array([3, 4], np.uint8), False, 7)
  queue.enqueue(tf.nest.map_structure(tf.convert_to_tensor, item))
  assert queue.size() == 1
  blocked = threading.Thread(target=queue.enqueue, args=(item,), daemon=True)
  blocked.start()
  blocked.join(0.3)
  assert blocked.is_alive(), 'enqueue into a full queue must block'
  out = queue.dequeue()
  assert isinstance(out, structures.EnvOutput)
  assert out.episode_step.numpy() == 7 and out.observation.numpy().tolist() == [3, 4]
  blocked.join(10)
  assert not blocked.is_alive() and queue.size() == 1
  many = queues.StructuredFIFOQueue(-1, specs)
  batch = tf.nest.map_structure(lambda s: tf.zeros([3] + s.shape.as_list(), s.dtype), specs)
  many.enqueue_many(batch)
  assert many.dequeue_many(3).observation.shape == [3, 2]
  with pytest.raises((ValueError, TypeError), match='same nested structure'):
    many.enqueue((1., True))
