"""Small continuous-control environments for tests and quick experiments (no TensorFlow).

- `ToyEnv`: reproduce the observation as the action (a bandit that needs no memory).
- `ToyMemoryEnv`: reproduce the observation seen `horizon` steps earlier (needs memory).
- `BitFlippingEnv`: the bit-flipping task of Hindsight Experience Replay (Andrychowicz et al.
  2017), a goal-conditioned env (`GoalEnv`) with dict observations and a sparse reward that
  `compute_reward` recomputes for any goal.

All follow the Gymnasium API: `reset(seed=None, options=None) -> (observation, info)` and
`step(action) -> (observation, reward, terminated, truncated, info)`; observations are float32
and rewards `np.float32`. Random draws come from `self.np_random`, so `reset(seed=s)` makes the
following episodes reproducible. Stepping an episode that has ended raises `RuntimeError`: reset
first.
"""

from typing import Any, ClassVar

import gymnasium
import numpy as np

GOAL_KEYS = ('observation', 'achieved_goal', 'desired_goal')


class ToyEnv(gymnasium.Env):
  """Each step shows a random vector in [-1, 1]^n_actions; the reward is -||action - obs||^2.

  Episodes last `horizon` steps (then `terminated`). The best policy copies the observation it
  was just shown and earns 0.
  """

  metadata: ClassVar[dict[str, Any]] = {'render_modes': []}

  def __init__(self, horizon: int = 3, n_actions: int = 3):
    if horizon < 1 or n_actions < 1:
      raise ValueError(f'horizon and n_actions must be >= 1, got {horizon} and {n_actions}')
    self.horizon = int(horizon)
    self.n_actions = int(n_actions)
    self.observation_space = gymnasium.spaces.Box(-1., 1., (self.n_actions,), np.float32)
    self.action_space = gymnasium.spaces.Box(-1., 1., (self.n_actions,), np.float32)
    self._observation = None
    self._step = 0
    self._episode_length = self.horizon

  def _draw(self) -> np.ndarray:
    return self.np_random.uniform(-1., 1., self.n_actions).astype(np.float32)

  def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
    super().reset(seed=seed)
    self._step = 0
    self._observation = self._draw()
    return self._observation.copy(), {}

  def _check_action(self, action) -> np.ndarray:
    if self._observation is None:
      raise RuntimeError(f'{type(self).__name__}.step called before reset()')
    if self._step >= self._episode_length:
      raise RuntimeError(f'{type(self).__name__}.step called after the episode ended; call '
                         'reset() first')
    action = np.asarray(action, np.float32)
    if action.shape != (self.n_actions,):
      raise ValueError(f'Expected an action of shape {(self.n_actions,)}, got {action.shape}')
    return action

  def step(self, action):
    action = self._check_action(action)
    reward = -np.sum(np.square(action - self._observation), dtype=np.float32)
    self._step += 1
    self._observation = self._draw()
    terminated = self._step >= self._episode_length
    return self._observation.copy(), np.float32(reward), terminated, False, {}


class ToyMemoryEnv(ToyEnv):
  """Recall: the action of step t must equal the observation of step t - horizon.

  An episode lasts `2 * horizon` steps. The first `horizon` observations are random vectors in
  [-1, 1]^n_actions (and their rewards 0); the last `horizon` are zeros, and step t's reward is
  -||action_t - observation_(t - horizon)||^2. A policy without memory cannot do better than
  guessing; a recurrent one can earn 0.
  """

  def __init__(self, horizon: int = 3, n_actions: int = 3):
    super().__init__(horizon, n_actions)
    self._episode_length = 2 * self.horizon
    self._shown = []

  def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
    gymnasium.Env.reset(self, seed=seed)
    self._step = 0
    self._shown = [self._draw() for _ in range(self.horizon)]
    self._observation = self._shown[0]
    return self._observation.copy(), {}

  def step(self, action):
    action = self._check_action(action)
    if self._step < self.horizon:
      reward = np.float32(0.)
    else:
      target = self._shown[self._step - self.horizon]
      reward = np.float32(-np.sum(np.square(action - target), dtype=np.float32))
    self._step += 1
    if self._step < self.horizon:
      self._observation = self._shown[self._step]
    else:
      self._observation = np.zeros(self.n_actions, np.float32)
    terminated = self._step >= self._episode_length
    return self._observation.copy(), reward, terminated, False, {}


class GoalEnv(gymnasium.Env):
  """A goal-conditioned env (the `GoalEnv` interface Gymnasium moved to gymnasium-robotics).

  Observations are dicts with `observation`, `achieved_goal` and `desired_goal`, and
  `compute_reward(achieved_goal, desired_goal, info)` gives the reward of reaching
  `achieved_goal` when `desired_goal` was wanted, so that replays can substitute goals
  (hindsight experience replay).
  """

  def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
    super().reset(seed=seed)
    if not isinstance(self.observation_space, gymnasium.spaces.Dict) or any(
        key not in self.observation_space.spaces for key in GOAL_KEYS):
      raise TypeError(f'A GoalEnv needs a Dict observation space with the keys {GOAL_KEYS}, '
                      f'got {self.observation_space}')

  def compute_reward(self, achieved_goal, desired_goal, info=None):
    raise NotImplementedError


class BitFlippingEnv(GoalEnv):
  """Flip bits until the state equals the goal (Andrychowicz et al. 2017).

  The state and the goal are `n_bits` random bits (float32 0/1). Action i (`Discrete(n_bits)`)
  flips bit i. The reward is 0 when the state equals the goal after the action, else -1; the
  episode then ends (`terminated`), or is cut after `horizon` steps (`truncated`).
  `achieved_goal` is the state itself.
  """

  metadata: ClassVar[dict[str, Any]] = {'render_modes': []}

  def __init__(self, n_bits: int = 10, horizon: int = 20):
    if n_bits < 1 or horizon < 1:
      raise ValueError(f'n_bits and horizon must be >= 1, got {n_bits} and {horizon}')
    self.n_bits = int(n_bits)
    self.horizon = int(horizon)
    bits = gymnasium.spaces.Box(0., 1., (self.n_bits,), np.float32)
    self.observation_space = gymnasium.spaces.Dict(
        {key: bits for key in GOAL_KEYS})
    self.action_space = gymnasium.spaces.Discrete(self.n_bits)
    self._state = None
    self._goal = None
    self._step = 0
    self._ended = False

  def _observation(self) -> dict[str, np.ndarray]:
    return {'observation': self._state.copy(), 'achieved_goal': self._state.copy(),
            'desired_goal': self._goal.copy()}

  def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
    super().reset(seed=seed)
    self._step = 0
    self._ended = False
    self._state = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
    self._goal = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
    return self._observation(), {}

  def step(self, action):
    if self._state is None:
      raise RuntimeError('BitFlippingEnv.step called before reset()')
    if self._ended:
      raise RuntimeError('BitFlippingEnv.step called after the episode ended; call reset() '
                         'first')
    action = np.asarray(action)
    if action.shape != () or action.dtype.kind not in 'iu' or not 0 <= action < self.n_bits:
      raise ValueError(f'Action {action!r} is not in {self.action_space}')
    self._state[int(action)] = 1. - self._state[int(action)]
    self._step += 1
    observation = self._observation()
    reward = self.compute_reward(observation['achieved_goal'], observation['desired_goal'])
    terminated = bool(reward == 0)
    truncated = not terminated and self._step >= self.horizon
    self._ended = terminated or truncated
    return observation, np.float32(reward), terminated, truncated, {'is_success': terminated}

  def compute_reward(self, achieved_goal, desired_goal, info=None):
    """-1 where the goals differ in any bit, else 0; on any leading (batch) dimensions.

    Args:
      achieved_goal, desired_goal: arrays `[..., n_bits]` (broadcast against each other).
      info: unused (the GoalEnv signature).

    Returns:
      float32 array `[...]` (a numpy scalar for single goals) of -1 and 0.
    """
    del info
    achieved_goal = np.asarray(achieved_goal)
    desired_goal = np.asarray(desired_goal)
    return -np.any(achieved_goal != desired_goal, axis=-1).astype(np.float32)
