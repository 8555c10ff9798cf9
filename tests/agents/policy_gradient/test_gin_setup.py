"""The on-policy entry points' agent from the packaged ppo.gin, for each kind of action space."""

import gin
import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient import gin_setup
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput

OBS_SIZE = 4


def _first_step(agent):
  """The learner's first call: one step on zeros (it creates the variables)."""
  env_output = EnvOutput(reward=tf.zeros([1]), done=tf.zeros([1], tf.bool),
                         observation=tf.zeros([1, OBS_SIZE]), abandoned=tf.zeros([1], tf.bool),
                         episode_step=tf.zeros([1], tf.int32))
  agent((tf.zeros([1]), env_output), agent.initial_state(1))


@pytest.fixture
def packaged_gin():
  gin_setup.parse_gin(None, [])
  yield
  gin.clear_config()


@pytest.mark.parametrize('num_actions', [2, 3])
def test_discrete_actions_take_every_logit_from_the_network(packaged_gin, num_actions):
  """ppo.gin asks for a scale independent of the input, which only continuous actions have (an
  odd number of logits used to be refused, an even one split in half)."""
  del packaged_gin
  space = gymnasium.spaces.Discrete(num_actions)
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(space)
  agent = gin_setup.create_agent(space, None, distribution)
  _first_step(agent)
  assert agent.std_parameters is None


def test_continuous_actions_keep_the_configured_input_independent_scale(packaged_gin):
  del packaged_gin
  space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(space)
  agent = gin_setup.create_agent(space, None, distribution)
  _first_step(agent)
  assert agent.std_parameters is not None and agent.std_parameters.shape[-1] == 2
