"""One residual block and one ResNet stack builder serve IMPALA's Atari/DMLab network and the
Football network."""

import gymnasium
import numpy as np
import tensorflow as tf

from seed_rl.agents.vtrace import networks
from seed_rl.common import parametric_distribution
from seed_rl.environments.football import networks as football_networks


def _blocks(model):
  return [layer for layers in model._stacks for layer in layers
          if isinstance(layer, networks.ResidualBlock)]


def test_impala_and_football_networks_use_the_one_residual_block():
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(3))
  impala = networks.ImpalaDeep(3)
  football = football_networks.GFootball(distribution)
  assert [block.name for block in _blocks(impala)] == [
      f'residual_{i}_{j}' for i in range(3) for j in range(2)]
  assert [block.name for block in _blocks(football)] == [
      f'residual_{i}_{j}' for i in range(4) for j in range(2)]


def test_residual_block_adds_two_relu_convolutions_to_its_input():
  block = networks.ResidualBlock(2, kernel_initializer='zeros')
  x = tf.constant(np.arange(16, dtype=np.float32).reshape([1, 2, 4, 2]) - 8)
  np.testing.assert_allclose(block(x), x)  # Zero kernels: only the input remains.
  block._conv_2.kernel.assign(tf.ones_like(block._conv_2.kernel))
  block._conv_1.bias.assign([1., 1.])
  # relu(x) through zero kernels + bias 1 gives ones; relu, then a 3x3x2 sum of ones.
  inner = tf.nn.conv2d(tf.ones_like(x), tf.ones([3, 3, 2, 2]), 1, 'SAME')
  np.testing.assert_allclose(block(x), x + inner)


def test_resnet_stacks_take_the_kernel_initializer():
  stacks = networks.resnet_stacks([(4, 1)], 'lecun_normal')
  conv, pool, block = stacks[0]
  assert (conv.name, type(pool), block.name) == ('conv_0', tf.keras.layers.MaxPool2D,
                                                   'residual_0_0')
  assert type(conv.kernel_initializer).__name__ == 'LecunNormal'
  assert type(block._conv_1.kernel_initializer).__name__ == 'LecunNormal'
  assert networks.apply_stacks(stacks, tf.zeros([1, 8, 8, 2])).shape == [1, 4, 4, 4]
