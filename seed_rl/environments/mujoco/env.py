"""MuJoCo (and toy) continuous-control environments for SEED RL actors (no TensorFlow).

  create_environment('HalfCheetah-v5')          any Gymnasium id with a Box action space
    gymnasium.make(env_name, **gym_kwargs)       (MuJoCo ids need the `mujoco` extra)
    -> SinglePrecisionWrapper                    float32 observations and rewards
    -> env_wrappers.UniformBoundActionSpaceWrapper  actions in [-1, 1]^d
    -> env_wrappers.DiscretizeEnvWrapper         only with discretization 'lin' or 'log'

The MuJoCo ids are Gymnasium's v5 ones (HalfCheetah-v5, Hopper-v5, Walker2d-v5, Ant-v5,
Humanoid-v5, ...) on the `mujoco` pip package; the original's v2 ids needed mujoco-py, which is
unmaintained. Any other Gymnasium id with a bounded Box action space works too (Pendulum-v1,
MountainCarContinuous-v0). `toy_env`, `toy_memory_env` and `bit_flip` are the toy envs of
`toy_env` (the last one is a GoalEnv for hindsight experience replay, returned as it is).

`create_environment_fn(env_id, config)` is the `(env_id, config) -> env` of the actors and
learners: it reads an `env_config.MujocoConfig` or the flags of `env_flags` (absl's `FLAGS`),
and refuses `num_action_repeats != 1`. `check_env_name` is the check of a name that
`create_environment` makes first; the launchers' flag check (`seed_rl.environments.env_names`)
calls it too, before anything starts.
"""

import difflib
import logging
import os
from typing import Any

import gymnasium
import numpy as np

from seed_rl.common import env_wrappers
from seed_rl.environments.mujoco import env_config
from seed_rl.environments.mujoco import toy_env

DISCRETIZATIONS = env_config.DISCRETIZATIONS
TOY_ENVS = ('toy_env', 'toy_memory_env', 'bit_flip')

INSTALL_HINT = ("MuJoCo is not installed in this Python; install seed_rl's mujoco extra: "
                "pip install -e '.[mujoco]' (./run_local.sh mujoco ... does it).")

_logger = logging.getLogger(__name__)


def _single_precision_space(space: gymnasium.Space) -> gymnasium.Space:
  if isinstance(space, gymnasium.spaces.Dict):
    return gymnasium.spaces.Dict(
        {key: _single_precision_space(value) for key, value in space.spaces.items()})
  if isinstance(space, gymnasium.spaces.Box) and np.issubdtype(space.dtype, np.floating):
    return gymnasium.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32),
                                space.shape, np.float32)
  return space


def _single_precision(value: Any) -> Any:
  if isinstance(value, dict):
    return {key: _single_precision(item) for key, item in value.items()}
  value = np.asarray(value)
  return value.astype(np.float32) if np.issubdtype(value.dtype, np.floating) else value


class SinglePrecisionWrapper(gymnasium.Wrapper):
  """Float32 observations (Box, or a Dict of Boxes: every floating leaf) and float32 rewards.

  TensorFlow networks run in float32 and the actors send what the env returns, so float64
  MuJoCo observations would double the traffic and fail the learner's float32 specs. The
  original also ended episodes here at the spec's `max_episode_steps`; `gymnasium.make` already
  adds a `TimeLimit` that does this (the episode ends with `truncated=True`, e.g. after 1000
  steps for the MuJoCo ids), so this wrapper only changes precision.
  """

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    self.observation_space = _single_precision_space(env.observation_space)

  def reset(self, **kwargs):
    observation, info = self.env.reset(**kwargs)
    return _single_precision(observation), info

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    return _single_precision(observation), np.float32(reward), terminated, truncated, info


def _route_mujoco_warnings_to_logging() -> None:
  """MuJoCo prints its warnings and appends them to MUJOCO_LOG.TXT in the working directory
  (HalfCheetah's model warns about `settotalmass` each time it is loaded); send them to Python
  logging instead, once per distinct message. Left alone when someone else set a handler."""
  try:
    import mujoco  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  if mujoco.get_mju_user_warning() is not None:
    return
  seen = set()

  def warn(message: str) -> None:
    if message not in seen:
      seen.add(message)
      _logger.warning('MuJoCo: %s', message)

  mujoco.set_mju_user_warning(warn)


def check_env_name(env_name: str) -> gymnasium.envs.registration.EnvSpec | None:
  """Refuses a name that `create_environment` would refuse for not naming an environment;
  returns its Gymnasium spec (None for a toy env).

  The one check of these names: the environment uses it before `gymnasium.make`, and the
  launchers' flag check (`seed_rl.environments.env_names`) before anything starts, so both
  refuse the same names with the same suggestions.

  Raises:
    ValueError: an id that `gymnasium.spec` does not find (with the closest names), or a
      mujoco-py id (with the id that replaces it).
  """
  if env_name in TOY_ENVS:
    return None
  try:
    spec = gymnasium.spec(env_name)
  except gymnasium.error.Error as e:
    close = difflib.get_close_matches(env_name, list(gymnasium.registry) + list(TOY_ENVS), n=3)
    hint = f' Did you mean {", ".join(close)}?' if close else ''
    raise ValueError(f'Unknown environment {env_name!r} ({e}).{hint} Use a Gymnasium id with '
                     f'a Box action space (e.g. HalfCheetah-v5, Hopper-v5, Pendulum-v1) or one '
                     f'of {", ".join(TOY_ENVS)}.') from e
  if 'mujoco_py' in str(spec.entry_point):
    # Gymnasium keeps the v2/v3 ids only to raise an ImportError about mujoco-py.
    newest = max((s.version or 0, s.id) for s in gymnasium.registry.values()
                 if s.name == spec.name and s.namespace == spec.namespace)[1]
    raise ValueError(f'{env_name} is a mujoco-py environment (the original used these ids; '
                     f'mujoco-py is unmaintained and not supported): use {newest}, its '
                     'successor on the mujoco package.')
  return spec


def _make_gymnasium_env(env_name: str, gym_kwargs: dict[str, Any]) -> gymnasium.Env:
  spec = check_env_name(env_name)
  if 'mujoco' in str(spec.entry_point):
    _route_mujoco_warnings_to_logging()
  try:
    return gymnasium.make(spec, **gym_kwargs)
  except gymnasium.error.DependencyNotInstalled as e:
    raise ImportError(f'{env_name}: {INSTALL_HINT} ({e})') from e


def create_environment(env_name: str, discretization: str = 'none', n_actions_per_dim: int = 11,
                       action_ratio: float = 30., gym_kwargs: dict[str, Any] | None = None
                       ) -> gymnasium.Env:
  """Creates the environment `env_name` with actions in [-1, 1] (or discretized).

  Args:
    env_name: a Gymnasium id with a bounded float32 Box action space (e.g. 'HalfCheetah-v5',
      'Hopper-v5', 'Pendulum-v1'), or 'toy_env', 'toy_memory_env' or 'bit_flip'.
    discretization: 'none' keeps the continuous actions; 'lin' and 'log' turn the [-1, 1]^d
      Box into `MultiDiscrete([n_actions_per_dim] * d)` (`env_wrappers.DiscretizeEnvWrapper`:
      evenly spaced values, or a logarithmic grid whose smallest positive value is
      1 / action_ratio).
    n_actions_per_dim: actions per dimension when discretized (odd for 'log').
    action_ratio: ratio of the largest to the smallest positive action of 'log'.
    gym_kwargs: keyword arguments of `gymnasium.make` (e.g. `{'max_episode_steps': 500}` or a
      MuJoCo env's own, such as `{'xml_file': ...}`); not for the toy envs.

  Returns:
    The wrapped env; 'bit_flip' is returned as it is (a `toy_env.GoalEnv` with dict
    observations and `Discrete` actions, which are not rescaled or discretized).

  Raises:
    ValueError: an unknown name or discretization, an action space that is not a bounded
      float32 Box, or observations that are neither a Box nor a Dict of Boxes.
    ImportError: a MuJoCo id when the `mujoco` package is not installed.
  """
  if discretization not in DISCRETIZATIONS:
    raise ValueError(f'Unknown discretization {discretization!r}; use one of '
                     f'{", ".join(DISCRETIZATIONS)}.')
  if env_name in TOY_ENVS and gym_kwargs:
    raise ValueError(f'gym_kwargs are for Gymnasium ids, not for {env_name!r}.')
  if env_name == 'bit_flip':
    if discretization != 'none':
      raise ValueError("bit_flip has Discrete actions: it cannot be discretized (use "
                       "discretization='none').")
    return toy_env.BitFlippingEnv()
  if env_name == 'toy_env':
    env = toy_env.ToyEnv()
  elif env_name == 'toy_memory_env':
    env = toy_env.ToyMemoryEnv()
  else:
    env = _make_gymnasium_env(env_name, dict(gym_kwargs or {}))
    action_space, observation_space = env.action_space, env.observation_space
    problem = None
    if not isinstance(action_space, gymnasium.spaces.Box):
      problem = f'only Box (continuous) action spaces are supported, got {action_space}'
    elif action_space.dtype != np.float32:
      problem = f'continuous actions must be float32, got {action_space.dtype}'
    elif not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
      problem = f'continuous actions must be bounded, got {action_space}'
    elif not (isinstance(observation_space, gymnasium.spaces.Box) or (
        isinstance(observation_space, gymnasium.spaces.Dict) and all(
            isinstance(s, gymnasium.spaces.Box) for s in observation_space.spaces.values()))):
      problem = (f'only Box (or Dict of Box) observation spaces are supported, got '
                 f'{observation_space}')
    if problem:
      env.close()
      raise ValueError(f'{env_name}: {problem}. For discrete actions use the gym entry points '
                       '(seed_rl.environments.gym).')
    env = SinglePrecisionWrapper(env)
  env = env_wrappers.UniformBoundActionSpaceWrapper(env)
  if discretization != 'none':
    env = env_wrappers.DiscretizeEnvWrapper(env, n_actions_per_dim, discretization,
                                            action_ratio)
  return env


def create_environment_fn(env_id: int, config: Any) -> gymnasium.Env:
  """`(env_id, config) -> env` for the entry points: `create_environment` with `config`'s values.

  Args:
    env_id: the environment's global id (unused: `BatchedEnvironment` seeds each env with
      `config.seed` + `env_id` on its first reset).
    config: an `env_config.MujocoConfig`, or absl flags holding its fields (those of
      `env_flags`; the entry points pass `FLAGS`), read with `MujocoConfig.of`. Its
      `render_mode` (e.g. 'rgb_array' for `seed_rl.evaluate --video`) and `mujoco_model` go to
      `gymnasium.make` (`render_mode`, `xml_file`); the toy envs do not render.

  Raises:
    ValueError: what `MujocoConfig.of` raises (a flag not defined; `num_action_repeats` not 1,
      as the original, these envs support no action repeats; an unknown discretization), or
      what `create_environment` raises.
    TypeError: `config` is neither a `MujocoConfig` nor absl flags.
  """
  del env_id
  config = env_config.MujocoConfig.of(config)
  gym_kwargs = {}
  if config.render_mode and config.env_name not in TOY_ENVS:
    gym_kwargs['render_mode'] = config.render_mode
  if config.mujoco_model:
    gym_kwargs['xml_file'] = os.path.abspath(config.mujoco_model)
  return create_environment(config.env_name, config.discretization, config.n_actions_per_dim,
                            config.action_ratio, gym_kwargs)
