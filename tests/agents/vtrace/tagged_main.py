"""Test entry point: V-trace on CartPole whose observations carry the actor's process id.

Training asserts that every unroll holds the steps of a single actor process, so a learner that
let a restarted actor's steps join the unroll of its dead predecessor fails loudly.
"""

import os

from absl import app
import gymnasium
import numpy as np

from seed_rl.common import entry_point
from seed_rl.environments.gym import env as gym_env
from seed_rl.environments.gym import vtrace_main

FLAGS = vtrace_main.FLAGS


class ProcessTag(gymnasium.ObservationWrapper):
  """Appends this process's id to the observation (exact in float32 below 2**24)."""

  def __init__(self, env):
    super().__init__(env)
    low = np.append(env.observation_space.low, 0).astype(np.float32)
    high = np.append(env.observation_space.high, 2**24).astype(np.float32)
    self.observation_space = gymnasium.spaces.Box(low, high, dtype=np.float32)

  def observation(self, observation):
    return np.append(observation, os.getpid()).astype(np.float32)


def create_environment(env_id, config):
  return ProcessTag(gym_env.create_environment(env_id, config))


def create_agent(action_space, observation_space, parametric_action_distribution):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed_rl.agents.vtrace import networks  # pylint: disable=g-import-not-at-top

  class TagCheckingAgent(networks.MLPandLSTM):

    def call(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
      tags = env_outputs.observation[..., -1]
      if unroll:
        tf.debugging.assert_equal(
            tags, tf.broadcast_to(tags[:1], tf.shape(tags)),
            message='An unroll mixes the steps of two actor processes.')
      env_outputs = env_outputs._replace(observation=env_outputs.observation[..., :-1])
      return super().call(prev_actions, env_outputs, core_state, unroll, is_training)

  return TagCheckingAgent(parametric_action_distribution, mlp_sizes=[16])


def main(argv):
  entry_point.run(argv, create_environment, 'seed_rl.agents.vtrace.learner', create_agent,
                  vtrace_main.create_optimizer)


if __name__ == '__main__':
  app.run(main)
