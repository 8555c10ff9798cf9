"""Bit packing of SMM observations: numpy packing (actor) against TF unpacking (learner)."""

import sys

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.environments.football import observation


def _binary_planes(shape, seed=0):
  """Random SMM-like planes: uint8 values 0 or 255."""
  rng = np.random.default_rng(seed)
  return (rng.integers(0, 2, size=shape) * 255).astype(np.uint8)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('num_channels', [1, 4, 12, 16, 17, 20, 32])
def test_pack_unpack_round_trip_with_extra_channels_zero(num_channels):
  planes = _binary_planes((3, 72, 96, num_channels))
  packed = observation.packbits(planes)
  words = observation.packed_channels(num_channels)
  assert packed.dtype == np.uint16
  assert packed.shape == (3, 72, 96, words)

  unpacked = observation.unpackbits(tf.constant(packed)).numpy()
  assert unpacked.dtype == np.float32
  assert unpacked.shape == (3, 72, 96, 16 * words)
  np.testing.assert_array_equal(unpacked[..., :num_channels], planes.astype(np.float32))
  # The padding channels of the last word come back as zeros.
  np.testing.assert_array_equal(unpacked[..., num_channels:], 0)


@pytest.mark.timeout(60)
def test_stacked_smm_packs_into_one_uint16_and_is_8x_smaller():
  planes = _binary_planes((72, 96, 16))
  packed = observation.packbits(planes)
  assert packed.shape == (72, 96, 1)
  assert planes.nbytes == 8 * packed.nbytes


@pytest.mark.timeout(60)
def test_bit_layout_is_the_originals():
  """The original packed with np.packbits and a native uint16 view (little-endian hosts)."""
  planes = _binary_planes((5, 7, 16), seed=1)
  if sys.byteorder == 'little':
    np.testing.assert_array_equal(observation.packbits(planes),
                                  np.packbits(planes, axis=-1).view(np.uint16))
  # Channel 0 is the most significant bit of the low byte, channel 8 of the high byte.
  one_hot = np.zeros((1, 1, 16), np.uint8)
  for channel, bit in [(0, 7), (7, 0), (8, 15), (15, 8)]:
    one_hot[:] = 0
    one_hot[..., channel] = 255
    assert observation.packbits(one_hot)[0, 0, 0] == 1 << bit


@pytest.mark.timeout(60)
def test_unpackbits_accepts_int32_words_and_runs_under_xla():
  """Words widened to int32 unpack the same; the network compiles with XLA on GPUs."""
  planes = _binary_planes((2, 72, 96, 16), seed=2)
  packed = observation.packbits(planes)
  expected = planes.astype(np.float32)
  np.testing.assert_array_equal(
      observation.unpackbits(tf.constant(packed.astype(np.int32))).numpy(), expected)
  compiled = tf.function(observation.unpackbits, jit_compile=True)
  np.testing.assert_array_equal(compiled(tf.constant(packed)).numpy(), expected)


@pytest.mark.timeout(60)
def test_unpackbits_rejects_other_dtypes():
  with pytest.raises(TypeError, match='uint16'):
    observation.unpackbits(tf.zeros([1, 2, 2, 1], tf.uint8))
