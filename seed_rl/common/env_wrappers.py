"""Environment wrappers used by actors (Gymnasium API, numpy only).

This module runs inside actor processes, which must stay small: it imports
numpy and gymnasium only, never TensorFlow (directly or through
`seed_rl.common.utils`).

Contents:
- `UniformBoundActionSpaceWrapper`: rescales a float32 Box action space to
  [-1, 1]^d.
- `DiscretizeEnvWrapper`: turns a symmetric 1-D Box action space into a
  `MultiDiscrete` one (linear or logarithmic grid per dimension).
- `BatchedEnvironment`: steps `batch_size` environments sequentially and
  stacks their outputs, which is what an actor sends to the learner.
"""

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np


class UniformBoundActionSpaceWrapper(gymnasium.Wrapper):
  """Exposes a float32 Box action space as Box([-1, 1]^d).

  Agents then always produce actions in [-1, 1] (e.g. via tanh squashing);
  `step` maps them affinely onto the wrapped env's [low, high].
  """

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    space = env.action_space
    if not isinstance(space, gymnasium.spaces.Box):
      raise TypeError(
          'UniformBoundActionSpaceWrapper needs a Box action space, got '
          f'{space!r}')
    if space.dtype != np.float32:
      raise ValueError(
          'UniformBoundActionSpaceWrapper needs a float32 action space, got '
          f'dtype {space.dtype}')
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
      raise ValueError(
          'UniformBoundActionSpaceWrapper needs finite action bounds, got '
          f'low={space.low} high={space.high}')
    self._half_range = (0.5 * (space.high - space.low)).astype(np.float32)
    self._mid_point = (0.5 * (space.high + space.low)).astype(np.float32)
    self.action_space = gymnasium.spaces.Box(
        low=-1.0, high=1.0, shape=space.shape, dtype=np.float32)

  def step(self, action):
    action = np.asarray(action, np.float32)
    # Written so that NaN fails the check too.
    if not np.all(np.abs(action) < 1.00001):
      raise ValueError(
          f'Action {action} is outside [-1, 1] (UniformBoundActionSpaceWrapper)')
    action = np.clip(action, -1.0, 1.0)
    return self.env.step(self._mid_point + self._half_range * action)


class DiscretizeEnvWrapper(gymnasium.Wrapper):
  """Discretizes a symmetric 1-D Box action space into `MultiDiscrete`.

  Each of the `d` action dimensions gets `n_actions_per_dim` values:
  - `discretization='lin'`: evenly spaced in [-high, high];
  - `discretization='log'`: `n_actions_per_dim` must be odd; the values are
    `-exp(l)`, 0 and `+exp(l)` where `l` holds `n_actions_per_dim // 2` points
    evenly spaced in [log(high / action_ratio), log(high)], i.e. a grid that
    is fine near 0 and coarse near the bounds.
  Values are sorted ascending, so action index 0 is the most negative one.
  """

  def __init__(self,
               env: gymnasium.Env,
               n_actions_per_dim: int,
               discretization: str = 'lin',
               action_ratio: float | None = None):
    super().__init__(env)
    space = env.action_space
    if not isinstance(space, gymnasium.spaces.Box):
      raise TypeError(
          f'DiscretizeEnvWrapper needs a 1-D Box action space, got {space!r}')
    if len(space.shape) != 1:
      raise ValueError(
          f'DiscretizeEnvWrapper needs a 1-D Box action space, got {space!r}')
    if int(n_actions_per_dim) < 2:
      raise ValueError(
          f'n_actions_per_dim must be >= 2, got {n_actions_per_dim}')
    n_actions_per_dim = int(n_actions_per_dim)
    high = np.asarray(space.high, np.float64)
    low = np.asarray(space.low, np.float64)
    if not np.all(np.isfinite(high)) or not np.allclose(high, -low):
      raise ValueError(
          'DiscretizeEnvWrapper needs finite symmetric bounds (low == -high), '
          f'got low={space.low} high={space.high}')
    dim_action = space.shape[0]

    if discretization == 'lin':
      # [d, n]
      action_set = np.linspace(-high, high, n_actions_per_dim, axis=1)
    elif discretization == 'log':
      if n_actions_per_dim % 2 != 1:
        raise ValueError(
            "discretization='log' needs an odd n_actions_per_dim, got "
            f'{n_actions_per_dim}')
      if action_ratio is None or not action_ratio > 0:
        raise ValueError(
            "discretization='log' needs a positive action_ratio, got "
            f'{action_ratio}')
      if not np.all(high > 0):
        raise ValueError(
            f"discretization='log' needs positive bounds, got high={high}")
      log_range = np.linspace(
          np.log(high / action_ratio), np.log(high), n_actions_per_dim // 2,
          axis=1)
      positive = np.exp(log_range)
      action_set = np.concatenate(
          [-positive[:, ::-1], np.zeros((dim_action, 1)), positive], axis=1)
    else:
      raise ValueError(
          f"Unknown discretization {discretization!r}; use 'lin' or 'log'")

    self._action_set = action_set.astype(space.dtype)
    self._action_dtype = space.dtype
    self.action_space = gymnasium.spaces.MultiDiscrete(
        [n_actions_per_dim] * dim_action)

  @property
  def action_set(self) -> np.ndarray:
    """The `[d, n_actions_per_dim]` table of continuous action values."""
    return self._action_set

  def step(self, action):
    action = np.asarray(action)
    nvec = self.action_space.nvec
    if (action.dtype.kind not in 'iu' or action.shape != nvec.shape or
        np.any(action < 0) or np.any(action >= nvec)):
      raise ValueError(
          f'Action {action} is not in {self.action_space} '
          '(DiscretizeEnvWrapper)')
    values = np.take_along_axis(
        self._action_set, action.astype(np.int64)[:, None], axis=1)[:, 0]
    return self.env.step(values.astype(self._action_dtype))


class InvalidActionError(ValueError):
  """The learner sent an action outside an environment's action space."""


def check_action(space: gymnasium.Space, action: Any, env_id: int) -> None:
  """Raises InvalidActionError unless `action` is valid for `space`.

  Discrete and MultiDiscrete actions must be in range; Box actions must have the space's shape
  and be finite (their bounds are the environment's to enforce). Other spaces are not checked.
  """
  action = np.asarray(action)
  if isinstance(space, gymnasium.spaces.Discrete):
    valid = (action.shape == () and action.dtype.kind in 'iu' and
             space.start <= action < space.start + space.n)
  elif isinstance(space, gymnasium.spaces.MultiDiscrete):
    valid = (action.shape == space.nvec.shape and action.dtype.kind in 'iu' and
             np.all(action >= space.start) and np.all(action < space.start + space.nvec))
  elif isinstance(space, gymnasium.spaces.Box):
    valid = action.shape == space.shape and bool(np.all(np.isfinite(action)))
  else:
    return
  if not valid:
    raise InvalidActionError(f'The learner sent action {action.tolist()} for environment {env_id}, '
                             f'which is not in its action space {space}.')


def _stack_nested(values: Sequence[Any]) -> Any:
  """Stacks a list of equally structured observations leaf-wise."""
  first = values[0]
  if isinstance(first, dict):
    return {k: _stack_nested([v[k] for v in values]) for k in first}
  if isinstance(first, tuple) and hasattr(first, '_fields'):  # namedtuple
    return type(first)(*(_stack_nested([v[i] for v in values])
                         for i in range(len(first))))
  if isinstance(first, (tuple, list)):
    return type(first)(_stack_nested([v[i] for v in values])
                       for i in range(len(first)))
  return np.stack([np.asarray(v) for v in values])


class BatchedEnvironment:
  """Steps a batch of environments sequentially, stacking their outputs.

  An actor owns `batch_size` environments with ids
  `[id_offset, id_offset + batch_size)`; it sends them to the learner as one
  batch per step. Episodes are not auto-reset: `step` reports `done` and the
  actor calls `reset_if_done(done)`, so the learner sees the first
  observation of the next episode together with `done=True`.

  Seeding: the first reset of each environment uses
  `seed = base + env_id` (`base = config.seed`, the `--seed` flag of
  `common_flags`; 0 when it is None), so runs are reproducible; later resets
  pass no seed and continue the environment's own random stream.
  """

  def __init__(self,
               create_env_fn: Callable[[int, Any], gymnasium.Env],
               batch_size: int,
               id_offset: int,
               config: Any):
    """Creates the environments.

    Args:
      create_env_fn: `(env_id, config) -> env`, called once per environment with its global id.
      batch_size: number of environments.
      id_offset: global id of the first environment.
      config: passed to `create_env_fn` (the flags of `common_flags` and the environment's);
        its `seed` (None: 0) is the base seed. None: factories that read no config.
    """
    if int(batch_size) < 1:
      raise ValueError(f'batch_size must be >= 1, got {batch_size}')
    self._batch_size = int(batch_size)
    self._env_ids = np.arange(
        id_offset, id_offset + self._batch_size, dtype=np.int32)
    base_seed = None if config is None else config.seed
    self._base_seed = 0 if base_seed is None else int(base_seed)
    self._envs = [create_env_fn(int(env_id), config)
                  for env_id in self._env_ids]
    self._was_reset = [False] * self._batch_size
    self._observations: list[Any] | None = None

  @property
  def env_ids(self) -> np.ndarray:
    """`<int32>[batch_size]` global ids of the environments."""
    return self._env_ids

  @property
  def batch_size(self) -> int:
    return self._batch_size

  @property
  def envs(self) -> list[gymnasium.Env]:
    """The wrapped environments (read-only use)."""
    return self._envs

  def _reset_one(self, i: int) -> Any:
    if self._was_reset[i]:
      obs, _ = self._envs[i].reset()
    else:
      obs, _ = self._envs[i].reset(
          seed=self._base_seed + int(self._env_ids[i]))
      self._was_reset[i] = True
    return obs

  def reset(self) -> Any:
    """Resets every environment and returns the stacked observations."""
    self._observations = [self._reset_one(i) for i in range(self._batch_size)]
    return _stack_nested(self._observations)

  def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray,
                                        list[dict[str, Any]]]:
    """Steps every environment with its action.

    Args:
      actions: `[batch_size, ...]` array (or sequence) of actions; row `i`
        goes to environment `i`.

    Returns:
      `(observations, rewards <float32>[b], dones <bool>[b], infos)` where
      observations are stacked leaf-wise, `done = terminated or truncated` and
      each info gets `info['truncated']` = truncated without termination (the
      episode was cut by a time limit, so its last state may be bootstrapped).

    Raises:
      InvalidActionError: an action is not valid for its environment (see `check_action`).
    """
    if self._observations is None:
      raise RuntimeError(
          'BatchedEnvironment.step called before reset(); call reset() first')
    if len(actions) != self._batch_size:
      raise ValueError(
          f'Expected {self._batch_size} actions (one per env), got '
          f'{len(actions)}')
    rewards = np.empty(self._batch_size, np.float32)
    dones = np.empty(self._batch_size, np.bool_)
    infos = []
    for i, env in enumerate(self._envs):
      check_action(env.action_space, actions[i], int(self._env_ids[i]))
      obs, reward, terminated, truncated, info = env.step(actions[i])
      self._observations[i] = obs
      rewards[i] = reward
      dones[i] = terminated or truncated
      info = dict(info)
      info['truncated'] = bool(truncated and not terminated)
      infos.append(info)
    return _stack_nested(self._observations), rewards, dones, infos

  def reset_if_done(self, done: Any) -> Any:
    """Resets the environments whose `done[i]` is set.

    Returns:
      The stacked current observations of all environments (fresh first
      observations for the reset ones).
    """
    if self._observations is None:
      raise RuntimeError(
          'BatchedEnvironment.reset_if_done called before reset(); call '
          'reset() first')
    done = np.asarray(done, np.bool_).reshape(-1)
    if done.shape[0] != self._batch_size:
      raise ValueError(
          f'reset_if_done expects {self._batch_size} done flags, got '
          f'{done.shape[0]}')
    for i in np.flatnonzero(done):
      self._observations[i] = self._reset_one(int(i))
    return _stack_nested(self._observations)

  def render(self) -> Any:
    """Renders the first environment."""
    return self._envs[0].render()

  def close(self) -> None:
    """Closes every environment (all are attempted even if one fails)."""
    errors = []
    for env in self._envs:
      try:
        env.close()
      except Exception as e:  # noqa: BLE001  (re-raised after the loop)
        errors.append(e)
    if errors:
      raise errors[0]
