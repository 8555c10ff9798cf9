"""The V-trace agent's acting: sampled actions for training envs, the mode for evaluation ones."""


import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.vtrace import config as config_lib
from seed_rl.agents.vtrace import learner
from seed_rl.agents.vtrace import networks
from seed_rl.common import parametric_distribution

pytestmark = pytest.mark.timeout(60)


def _agent(num_envs, num_eval_envs, action_space):
  config = config_lib.VTraceConfig(num_envs=num_envs, num_eval_envs=num_eval_envs,
                                   entropy_cost=0.01, entropy_cost_adjustment_speed=10.)
  agent = learner.VTraceAgent(
      lambda unused_a, unused_o, dist: networks.MLPandLSTM(dist, [4]), config)
  agent.create_networks(action_space, None, None)
  return agent


def test_evaluation_envs_act_with_the_mode_and_training_envs_sample():
  agent = _agent(num_envs=4, num_eval_envs=2, action_space=gymnasium.spaces.Discrete(3))
  logits = tf.constant([[0., 5., 0.]] * 4)
  outputs = networks.AgentOutput(tf.constant([0, 2, 0, 2], tf.int64), logits, tf.zeros([4]))
  explored = agent.explore(tf.constant([0, 1, 2, 3]), outputs)
  # Env ids 2 and 3 evaluate: their action is the mode (1); the others keep their sample.
  np.testing.assert_array_equal(explored.action, [0, 2, 1, 1])
  assert explored.action.dtype == tf.int64


def test_the_mode_of_continuous_actions_for_evaluation_envs():
  space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
  agent = _agent(num_envs=2, num_eval_envs=1, action_space=space)
  dist = parametric_distribution.get_parametric_distribution_for_action_space(space)
  params = tf.constant([[0.5, -0.5, 0., 0.]] * 2)
  outputs = networks.AgentOutput(tf.constant([[0.9, 0.9]] * 2), params, tf.zeros([2]))
  explored = agent.explore(tf.constant([0, 1]), outputs)
  np.testing.assert_allclose(explored.action[0], [0.9, 0.9])
  np.testing.assert_allclose(explored.action[1], dist(params[1]).mode(), rtol=1e-6)


def test_without_evaluation_envs_every_action_is_kept():
  agent = _agent(num_envs=2, num_eval_envs=0, action_space=gymnasium.spaces.Discrete(3))
  outputs = networks.AgentOutput(tf.constant([0, 2], tf.int64), tf.zeros([2, 3]), tf.zeros([2]))
  assert agent.explore(tf.constant([0, 1]), outputs) is outputs
