"""Google Research Football (gfootball 2.10.2) for SEED RL actors, on the Gymnasium API.

  gfootball.env.create_environment(game, representation='extracted' (SMM), stacked=True,
                                   rewards=reward_experiment, channel_dimensions=smm size)
    -> GymnasiumFootball     old gym API (gym 0.25) -> Gymnasium API; engine seeding
    -> PackedBitsObservation  16 binary planes -> <uint16>[H, W, 1]

gfootball is built on the unmaintained `gym` package (0.25.2: 0.26 changed `reset` and breaks
gfootball's own wrappers). Our actors and learners speak Gymnasium, so `GymnasiumFootball`
adapts it: `reset(seed=...)` returns `(observation, info)` and `step` returns
`(observation, reward, terminated, truncated, info)`. The env is created with
`gfootball.env.create_environment` rather than `gym.make`: that is what the registered
`GFootball-{game}-SMM-v0` ids call, minus gym's passive env checker, which uses `np.bool8`
(gone in numpy 2).

Every step's `info['score_reward']` is the raw score change (+1 / -1 for a goal), also when
`reward_experiment` adds shaped checkpoint rewards; the actor reports it as the raw reward.

Actor-side module: no TensorFlow, no absl flags; `config` is any object with the attributes
read below. gfootball is imported when an env is created, so that a missing install gives a
message saying how to install it.
"""

import contextlib
import difflib
import io
import sys
import warnings
from typing import Any

import gymnasium
import numpy as np

from seed_rl.environments.football import observation

# `smm_size` -> SMM (width, height), gfootball's `channel_dimensions`.
SMM_SIZES = {
    'default': (96, 72),
    'medium': (120, 90),
    'large': (144, 108),
}

# The reward components gfootball knows. Its scoring reward is always part of the reward
# ('checkpoints' alone means 'scoring,checkpoints'), as in gfootball itself.
_REWARDS = ('scoring', 'checkpoints')

# gfootball draws engine seeds in [0, 2e9].
_MAX_ENGINE_SEED = 2_000_000_000

INSTALL_HINT = ('gfootball is not installed in this Python; install it with '
                'seed_rl/environments/football/install.sh PYTHON (or run '
                './run_local.sh football ..., which does).')


def _import_gfootball() -> tuple[Any, Any]:
  """`(gfootball.env, gfootball.env.scenario_builder)`, or an ImportError saying how to install.

  gym prints a notice that it is unmaintained when first imported; gfootball needs that gym,
  and we know, so the notice is dropped (anything else printed goes through).
  """
  captured = io.StringIO()
  try:
    with contextlib.redirect_stderr(captured):
      import gfootball.env  # pylint: disable=g-import-not-at-top
      from gfootball.env import scenario_builder  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(f'{INSTALL_HINT} ({e})') from e
  finally:
    text = captured.getvalue()
    if text and 'Gym has been unmaintained' not in text:
      sys.stderr.write(text)
  return gfootball.env, scenario_builder


def game_names() -> list[str]:
  """Sorted names of the scenarios usable as `config.game`."""
  _, scenario_builder = _import_gfootball()
  return sorted(scenario_builder.all_scenarios())


def check_game_name(game: str) -> str:
  """Returns `game` if gfootball has that scenario, else raises ValueError with suggestions."""
  names = game_names()
  if game in names:
    return game
  matches = difflib.get_close_matches(str(game), names, n=3, cutoff=0.5)
  hint = f' Did you mean {", ".join(repr(m) for m in matches)}?' if matches else ''
  raise ValueError(f'Unknown GFootball scenario {game!r} (see game_names()).{hint}')


def check_reward_experiment(reward_experiment: str) -> str:
  """Returns `reward_experiment` if gfootball knows it: comma-separated names of `_REWARDS`."""
  parts = str(reward_experiment).split(',')
  if not all(part in _REWARDS for part in parts):
    raise ValueError("reward_experiment must be 'scoring' or 'scoring,checkpoints' (comma-"
                     f'separated names from {_REWARDS}), got {reward_experiment!r}.')
  return reward_experiment


def smm_channel_dimensions(smm_size: str) -> tuple[int, int]:
  """`(width, height)` of the Super Mini Map for `smm_size` ('default', 'medium', 'large')."""
  try:
    return SMM_SIZES[smm_size]
  except KeyError:
    raise ValueError(f'smm_size must be one of {sorted(SMM_SIZES)}, got {smm_size!r}.') from None


def _to_gymnasium_space(space: Any) -> gymnasium.spaces.Space:
  """Converts a gym 0.25 Box or Discrete space to its Gymnasium twin."""
  kind = type(space).__name__
  if kind == 'Box':
    return gymnasium.spaces.Box(low=np.asarray(space.low), high=np.asarray(space.high),
                                shape=space.shape, dtype=space.dtype)
  if kind == 'Discrete':
    return gymnasium.spaces.Discrete(int(space.n))
  raise ValueError(f'Unsupported gfootball space {space!r} (expected Box or Discrete).')


class GymnasiumFootball(gymnasium.Env):
  """A gfootball env (old gym API) behind the Gymnasium API.

  Episodes end when the scenario ends (goal, ball out of play for academy scenarios, or the
  end of the match): that is the end of the game, so it is reported as `terminated`, never
  `truncated`.

  Seeding: gfootball draws a fresh engine seed from Python's global `random` for every episode,
  and fixes the order in which the engine processes the two teams (`reverse_team_processing`)
  from the parity of the first episode's seed, drawn when the env is created. Here each
  episode's engine seed is drawn from this env's `np_random`, and the team order follows each
  episode's seed, so `reset(seed=s)` makes the following episodes reproducible for the same
  actions.
  """

  metadata = {'render_modes': []}

  def __init__(self, env: Any):
    """`env`: a gfootball env from `gfootball.env.create_environment` (gym 0.25 API)."""
    self._env = env
    self.observation_space = _to_gymnasium_space(env.observation_space)
    self.action_space = _to_gymnasium_space(env.action_space)
    # The gfootball Config shared by the FootballEnv and its engine core.
    self._football_config = env.unwrapped._config  # pylint: disable=protected-access

  @property
  def gym_env(self) -> Any:
    """The wrapped gfootball (gym 0.25) environment."""
    return self._env

  def reset(self, *, seed: int | None = None,
            options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Starts an episode with an engine seed drawn from `np_random` (seeded by `seed`)."""
    super().reset(seed=seed)
    del options
    engine_seed = int(self.np_random.integers(0, _MAX_ENGINE_SEED + 1))
    self._football_config['game_engine_random_seed'] = engine_seed
    self._football_config['reverse_team_processing'] = bool(engine_seed % 2)
    return self._env.reset(), {}

  def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
    """One engine step; the end of a scenario is `terminated` (see the class docstring)."""
    obs, reward, done, info = self._env.step(int(action))
    return obs, float(reward), bool(done), False, dict(info)

  def close(self) -> None:
    self._env.close()


def create_environment(env_id: int, config: Any) -> gymnasium.Env:
  """Creates the Football env of one actor environment.

  Args:
    env_id: environment id (unused: `BatchedEnvironment` seeds each env at its first reset).
    config: object with attributes `game` (scenario name), `reward_experiment`
      ('scoring' or 'scoring,checkpoints'), `smm_size` ('default', 'medium' or 'large') and
      `num_action_repeats` (must be 1: gfootball steps are not repeated).

  Returns:
    A Gymnasium env with `Discrete(19)` actions and `<uint16>[H, W, 1]` observations: the
    stacked SMM (4 frames x 4 planes) packed by `observation.PackedBitsObservation`; `[72, 96,
    1]` for the default size.

  Raises:
    ValueError: a config value is invalid.
    ImportError: gfootball is not installed (the message says how to install it).
  """
  del env_id
  if config.num_action_repeats != 1:
    raise ValueError('Football does not repeat actions: num_action_repeats must be 1, got '
                     f'{config.num_action_repeats}.')
  channel_dimensions = smm_channel_dimensions(config.smm_size)
  rewards = check_reward_experiment(config.reward_experiment)
  game = check_game_name(config.game)
  gfootball_env, _ = _import_gfootball()
  with warnings.catch_warnings():
    # Every gym 0.25 wrapper warns that it uses the old step API, which GymnasiumFootball adapts.
    warnings.filterwarnings('ignore', message='.*old step API')
    env = gfootball_env.create_environment(
        env_name=game, representation='extracted', stacked=True, rewards=rewards,
        channel_dimensions=channel_dimensions)
  return observation.PackedBitsObservation(GymnasiumFootball(env))
