"""The Atari entry points' `--network=minimal`: small MLPs that run on Atari's frames."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import parametric_distribution
from seed_rl.common.networks import EnvOutput
from seed_rl.environments.atari import minimal_networks

NUM_ACTIONS = 6
BATCH = 3
# The frame's 7,056 pixels into 8 units and small heads (the Nature-DQN network has about 1.7M).
MOST_PARAMETERS = 60_000


def _env_outputs():
  rng = np.random.RandomState(0)
  return EnvOutput(reward=tf.zeros([BATCH]), done=tf.zeros([BATCH], tf.bool),
                   observation=tf.constant(rng.randint(0, 256, [BATCH, 84, 84, 1]), tf.uint8),
                   abandoned=tf.zeros([BATCH], tf.bool), episode_step=tf.zeros([BATCH], tf.int32))


def _parameters(network) -> int:
  return sum(int(np.prod(variable.shape)) for variable in network.trainable_variables)


@pytest.mark.timeout(60)
def test_the_vtrace_network_acts_on_frames_with_a_small_mlp():
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(NUM_ACTIONS))
  network = minimal_networks.create_vtrace_network(distribution)
  outputs, state = network(tf.zeros([BATCH], tf.int64), _env_outputs(),
                           network.initial_state(BATCH))
  assert outputs.policy_logits.shape == [BATCH, NUM_ACTIONS]
  assert outputs.baseline.shape == [BATCH] and state == ()
  assert _parameters(network) < MOST_PARAMETERS


@pytest.mark.timeout(60)
def test_the_r2d2_network_gives_a_q_value_per_action_and_an_lstm_state():
  network = minimal_networks.create_r2d2_network(NUM_ACTIONS)
  state = network.initial_state(BATCH)
  outputs, new_state = network((tf.zeros([BATCH], tf.int64), _env_outputs()), state)
  assert outputs.q_values.shape == [BATCH, NUM_ACTIONS]
  assert [h.shape for h in new_state[0]] == [[BATCH, minimal_networks.UNITS]] * 2
  assert _parameters(network) < MOST_PARAMETERS
