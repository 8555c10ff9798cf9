"""R2D2's networks module: the shared dueling head and Q-network, and the older paths that
keep reaching them (Atari's, as the original had it, and Gymnasium's)."""

import numpy as np
import tensorflow as tf

from seed_rl.agents.r2d2 import networks
from seed_rl.environments.atari import networks as atari_networks


def test_dueling_output_subtracts_the_mean_advantage_and_acts_greedily():
  output = networks.dueling_output(tf.constant([[1.], [-2.]]),
                                   tf.constant([[1., 3., 2.], [0., -3., 3.]]))
  np.testing.assert_allclose(output.q_values, [[0., 2., 1.], [-2., -5., 1.]])
  np.testing.assert_array_equal(output.action, [1, 2])
  assert output.action.dtype == tf.int32


def test_the_atari_network_shares_the_r2d2_output():
  assert atari_networks.AgentOutput is networks.AgentOutput

