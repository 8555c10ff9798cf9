"""Any Gymnasium environment by id, adapted to what the learners expect (no TensorFlow).

The quick path for experiments and the template for custom environments: observations become
float32 when they are float64 (TensorFlow networks run in float32), and a bounded continuous
action space is rescaled to [-1, 1] (the range the tanh-normal policy produces). Discrete and
Box spaces are supported.
"""

from typing import Any

import gymnasium
import numpy as np

from seed_rl.common import env_wrappers


class SinglePrecisionObservation(gymnasium.ObservationWrapper):
  """Casts float64 Box observations to float32."""

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    space = env.observation_space
    self.observation_space = gymnasium.spaces.Box(
        space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)

  def observation(self, observation):
    return np.asarray(observation, np.float32)


def create_environment(task: int, config: Any) -> gymnasium.Env:
  """Creates `config.env_name`, e.g. 'CartPole-v1' (`task` is the environment id).

  Raises:
    ValueError: the id is unknown, or its spaces are not Box/Discrete.
  """
  del task  # Seeds come from BatchedEnvironment (config.seed + env id).
  try:
    env = gymnasium.make(config.env_name)
  except gymnasium.error.Error as e:
    raise ValueError(f'Cannot create Gymnasium environment {config.env_name!r}: {e}') from e
  observation_space, action_space = env.observation_space, env.action_space
  if not isinstance(observation_space, gymnasium.spaces.Box):
    raise ValueError(f'{config.env_name}: only Box observation spaces are supported, got '
                     f'{observation_space}.')
  if not isinstance(action_space, (gymnasium.spaces.Box, gymnasium.spaces.Discrete)):
    raise ValueError(f'{config.env_name}: only Box and Discrete action spaces are supported, '
                     f'got {action_space}.')
  if np.issubdtype(observation_space.dtype, np.floating) and observation_space.dtype != np.float32:
    env = SinglePrecisionObservation(env)
  if isinstance(action_space, gymnasium.spaces.Box):
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
      raise ValueError(f'{config.env_name}: continuous actions must be bounded, got '
                       f'{action_space}.')
    if action_space.dtype != np.float32:
      raise ValueError(f'{config.env_name}: continuous actions must be float32, got '
                       f'{action_space.dtype}.')
    if not (np.all(action_space.low == -1) and np.all(action_space.high == 1)):
      env = env_wrappers.UniformBoundActionSpaceWrapper(env)
  return env
