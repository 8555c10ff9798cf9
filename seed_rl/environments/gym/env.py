"""Any Gymnasium environment by id, adapted to what the learners expect (no TensorFlow).

The quick path for experiments and the template for custom environments: observations become
float32 when they are float64 (TensorFlow networks run in float32), and a bounded continuous
action space is rescaled to [-1, 1] (the range the tanh-normal policy produces). Discrete and
Box spaces are supported. As the original's MuJoCo environment did, a continuous action space can
instead be discretized into a `MultiDiscrete` one (`discretization` 'lin' or 'log').
The factory reads an `env_config.GymConfig`, or the flags of `env_flags` (absl's `FLAGS`).
"""

from typing import Any

import gymnasium
import numpy as np

from seed_rl.common import env_wrappers
from seed_rl.environments.gym import env_config


class SinglePrecisionObservation(gymnasium.ObservationWrapper):
  """Casts float64 Box observations to float32."""

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    space = env.observation_space
    self.observation_space = gymnasium.spaces.Box(
        space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)

  def observation(self, observation):
    return np.asarray(observation, np.float32)


DISCRETIZATIONS = env_config.DISCRETIZATIONS


def create_environment(env_id: int, config: Any) -> gymnasium.Env:
  """Creates `config.env_name`, e.g. 'CartPole-v1' (`env_id` is the environment id).

  Args:
    env_id: the environment's global id (unused here).
    config: an `env_config.GymConfig`, or absl flags holding its fields (those of `env_flags`;
      the entry points pass `FLAGS`), read with `GymConfig.of`. With `discretization` 'lin' or
      'log', the [-1, 1] Box action space becomes `MultiDiscrete([n_actions_per_dim] * d)`
      through `env_wrappers.DiscretizeEnvWrapper` (evenly spaced values, or a logarithmic grid
      whose smallest positive value is 1 / action_ratio). `render_mode` is Gymnasium's, e.g.
      'rgb_array' (what `seed_rl.evaluate --video` asks for).

  Raises:
    ValueError: the id is unknown, its spaces are not Box/Discrete, a discretization is asked
      for an environment without a Box action space, or what `GymConfig.of` raises (a flag not
      defined, an unknown discretization).
    TypeError: `config` is neither a `GymConfig` nor absl flags.
  """
  config = env_config.GymConfig.of(config)
  discretization = config.discretization
  del env_id  # Seeds come from BatchedEnvironment (config.seed + env id).
  try:
    env = gymnasium.make(config.env_name, render_mode=config.render_mode)
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
    if discretization != 'none':
      env = env_wrappers.DiscretizeEnvWrapper(
          env, config.n_actions_per_dim, discretization, config.action_ratio)
  elif discretization != 'none':
    raise ValueError(f'{config.env_name}: discretization={discretization!r} needs a Box action '
                     f'space, got {action_space}.')
  return env
