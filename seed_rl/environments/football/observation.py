"""Bit-packed Super Mini Map (SMM) observations: packed on the actor, unpacked on the learner.

A stacked SMM observation is 16 binary planes (4 frames x 4 planes: left team, right team,
ball, active player) of `[72, 96]` uint8 pixels that are either 0 or 255. Sending it as is costs
16 bytes per pixel; `PackedBitsObservation` packs the 16 bits of a pixel into one uint16
(`[72, 96, 1]`, 8x less traffic between actors and learner and in the learner's unroll store),
and the network calls `unpackbits` to get the planes back.

Bit layout (the original SEED RL's, kept so that packed data stays interchangeable): the
channels are packed with `np.packbits` (channel 0 in the most significant bit of byte 0,
channel 8 in the most significant bit of byte 1), and each pair of bytes forms a little-endian
uint16 (byte 0 in the low 8 bits). So channel `c` of a group of 16 sits in bit
`8 * (c // 8) + 7 - c % 8` of its uint16.

Actors import this module, so it must not import TensorFlow at module level: `unpackbits`
imports it when the learner calls it.
"""

from typing import Any

import gymnasium
import numpy as np

# Channels per packed uint16.
BITS_PER_WORD = 16


def _bit_positions() -> list[int]:
  """Bit of the uint16 that holds channel `c` (0..15) of its group, as `np.packbits` puts it."""
  return [8 * (c // 8) + 7 - c % 8 for c in range(BITS_PER_WORD)]


def packed_channels(num_channels: int) -> int:
  """Number of uint16 channels that hold `num_channels` binary channels."""
  return -(-int(num_channels) // BITS_PER_WORD)


def packbits(observation: np.ndarray) -> np.ndarray:
  """Packs the channel (last) axis of a binary observation into uint16 words.

  Args:
    observation: `[..., C]` array; a value counts as 1 when it is non-zero (SMM planes hold
      0 or 255).

  Returns:
    `<uint16>[..., ceil(C / 16)]`; missing channels of the last word are zero.
  """
  packed = np.packbits(np.asarray(observation), axis=-1)  # [..., ceil(C / 8)] uint8
  if packed.shape[-1] % 2:
    packed = np.concatenate([packed, np.zeros_like(packed[..., :1])], axis=-1)
  # Byte 2k in the low bits, byte 2k+1 in the high bits (the little-endian view the original
  # used), written out so it holds on any host.
  return (packed[..., 0::2].astype(np.uint16) |
          (packed[..., 1::2].astype(np.uint16) << 8))


class PackedBitsObservation(gymnasium.ObservationWrapper):
  """Packs a binary `[H, W, C]` uint8 observation into `<uint16>[H, W, ceil(C / 16)]`."""

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    space = env.observation_space
    if not isinstance(space, gymnasium.spaces.Box) or len(space.shape) < 1:
      raise ValueError(f'PackedBitsObservation needs a Box observation space with a channel '
                       f'axis, got {space}.')
    shape = space.shape[:-1] + (packed_channels(space.shape[-1]),)
    self.observation_space = gymnasium.spaces.Box(
        low=0, high=np.iinfo(np.uint16).max, shape=shape, dtype=np.uint16)

  def observation(self, observation: np.ndarray) -> np.ndarray:
    return packbits(observation)


def unpackbits(frame: Any) -> Any:
  """TensorFlow inverse of `packbits`: `[..., K]` uint16 words to `<float32>[..., 16 K]`.

  Each channel is 0 or 255 (the SMM's values), in the original channel order; channels that
  were padding when packing come back as zeros. `frame` may also hold the words widened to
  int32.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (actors never call this)

  frame = tf.convert_to_tensor(frame)
  if frame.dtype not in (tf.uint16, tf.int32):
    raise TypeError(f'unpackbits expects uint16 (or int32) words, got {frame.dtype}.')
  num_words = frame.shape[-1]
  if num_words is None:
    raise ValueError('unpackbits needs a statically known channel (last) dimension.')
  words = tf.cast(frame, tf.int32)[..., tf.newaxis]  # [..., K, 1]
  shifts = tf.constant(_bit_positions(), tf.int32)  # [16]
  bits = tf.bitwise.bitwise_and(tf.bitwise.right_shift(words, shifts), 1)  # [..., K, 16]
  shape = tf.concat([tf.shape(frame)[:-1], [num_words * BITS_PER_WORD]], axis=0)
  bits = tf.reshape(bits, shape)
  bits.set_shape(frame.shape[:-1].concatenate([num_words * BITS_PER_WORD]))
  return tf.cast(bits, tf.float32) * 255.
