"""Atari (ALE) environment factory for SEED RL actors.

The pipeline reproduces the original's, on Gymnasium + ale-py:

  AtariEnv('{game}NoFrameskip-v4', full action space (18 actions) unless
           `full_action_space` is false,
           frameskip=1, sticky actions 0.25 or 0.0)
    -> seeded with `env_id` at the first reset (unless given a seed)
    -> TimeLimit(max_episode_frames)    counts *emulator frames* (108,000 =
                                        30 min of play), as the original put
                                        its TimeLimit below the preprocessing
    -> AtariPreprocessing(frame_skip=num_action_repeats, max_random_noops)

Notes on ale-py 0.12 (see also `create_environment`):
- `{game}NoFrameskip-v4` and `-v0` differ only in the default
  `repeat_action_probability` (0.0 vs 0.25); we always use `-v4` and pass the
  probability explicitly (identical to the original's `-v0` choice).
- ale-py registers the v0/v4 ids with ALE's own
  `max_num_frames_per_episode=108_000` and no Gymnasium `TimeLimit`. We turn
  ALE's limit off (0) so that the single `TimeLimit` here is the one limit,
  and a custom `max_episode_frames` (tests) is not capped by ALE's.
- The inner env is created with `obs_type='ram'`: its per-frame observation
  is discarded (AtariPreprocessing reads the screen itself), and copying the
  128-byte RAM is far cheaper than a 210x160 RGB screen on every frame.

Importing this module defines the flags `--game`, `--max_random_noops` and
`--sticky_actions`, as the original's module did, and `--full_action_space`
(and the common ones, `--num_action_repeats` among them), and makes 4 the
default of `--num_action_repeats`, so that `create_environment(task, FLAGS)`
builds the Atari environment of the entry points once this module alone is
imported. Only the Atari entry points (and tools that build Atari envs)
import it: other environments keep the common default of 1. `config` may
also be an `env_config.AtariConfig`, whose defaults the flags take.
Actor-side module: no TensorFlow.
"""

import difflib
import functools
from typing import Any

from absl import flags
import ale_py
import gymnasium
from gymnasium.wrappers import TimeLimit

from seed_rl.common import common_flags  # noqa: F401  (defines --num_action_repeats)
from seed_rl.environments.atari import atari_preprocessing
from seed_rl.environments.atari import env_config

_DEFAULTS = env_config.AtariConfig()

flags.DEFINE_string('game', _DEFAULTS.game, 'Atari game name, e.g. Pong, Breakout, MsPacman.')
flags.DEFINE_integer('max_random_noops', _DEFAULTS.max_random_noops,
                     'At most this many no-op actions start every episode.')
flags.DEFINE_bool('sticky_actions', _DEFAULTS.sticky_actions,
                  'Repeat the previous action with probability 0.25 (Machado et al. 2018).')
flags.DEFINE_bool('full_action_space', _DEFAULTS.full_action_space,
                  'Act with all 18 Atari actions (the original); false: the game\'s minimal '
                  'set (6 for Pong, 4 for Breakout).')

# Frames per agent step (`env_config`), set here, where the other Atari flags are defined, so
# that importing this module alone (as the original's users do) builds the same environment as
# the entry points.
ATARI_DEFAULT_NUM_ACTION_REPEATS = env_config.ATARI_DEFAULT_NUM_ACTION_REPEATS
flags.FLAGS.set_default('num_action_repeats', _DEFAULTS.num_action_repeats)

# 30 minutes of emulator frames at 60 Hz.
DEFAULT_MAX_EPISODE_FRAMES = 108_000

_ID_SUFFIX = 'NoFrameskip-v4'


@functools.lru_cache(maxsize=1)
def _register() -> None:
  gymnasium.register_envs(ale_py)


def atari_game_names() -> list[str]:
  """Sorted names of the games usable as `config.game` (e.g. 'Pong')."""
  _register()
  return sorted(env_id[:-len(_ID_SUFFIX)]
                for env_id in gymnasium.envs.registry
                if env_id.endswith(_ID_SUFFIX) and '/' not in env_id)


def check_game_name(game: str) -> str:
  """Returns `game` if it is a known Atari game, else raises ValueError.

  The error names the game and suggests close matches (e.g. 'pong' or
  'Pong-v5' → 'Pong').
  """
  names = atari_game_names()
  if game in names:
    return game
  lowered = {name.lower(): name for name in names}
  matches = difflib.get_close_matches(
      str(game).lower(), list(lowered), n=3, cutoff=0.5)
  suggestion = [lowered[m] for m in matches]
  hint = (f' Did you mean {", ".join(repr(s) for s in suggestion)}?'
          if suggestion else '')
  raise ValueError(
      f'Unknown Atari game {game!r} (expected a name like \'Pong\' or '
      f'\'MsPacman\', see atari_game_names()).{hint}')


class _SeedOnFirstReset(gymnasium.Wrapper):
  """Uses `seed` for the first `reset` unless that reset brings its own.

  Gymnasium's replacement for the original's `env.seed(task)`. Seeding an ALE
  env reloads the ROM (slow), so it is done lazily, once, at the first
  reset rather than eagerly here and again when `BatchedEnvironment` resets
  with its own seed.
  """

  def __init__(self, env: gymnasium.Env, seed: int):
    super().__init__(env)
    self._pending_seed: int | None = seed

  def reset(self, *, seed=None, options=None):
    if seed is None:
      seed = self._pending_seed
    self._pending_seed = None
    return self.env.reset(seed=seed, options=options)


def create_environment(
    env_id: int,
    config: Any,
    max_episode_frames: int = DEFAULT_MAX_EPISODE_FRAMES,
) -> atari_preprocessing.AtariPreprocessing:
  """Creates the preprocessed Atari environment for one actor env.

  Args:
    env_id: environment id; the seed of the emulator and of the no-op sampler
      at the first `reset()`, unless that reset passes its own `seed` (as
      `BatchedEnvironment` does).
    config: an `env_config.AtariConfig` (`game`, e.g. 'Pong',
      `max_random_noops`, `sticky_actions`: repeat-action probability 0.25
      when true, else 0.0, `full_action_space`: all 18 actions, else the
      game's minimal set, and `num_action_repeats`: the frame skip), or absl
      flags holding its fields (the flags this module defines; the entry
      points pass `FLAGS`), read with `AtariConfig.of`.
    max_episode_frames: episode limit in emulator frames, so it does not
      depend on `num_action_repeats`; hitting it gives `truncated=True`.

  Returns:
    An env with observations `Box(0, 255, [84, 84, 1], uint8)` and
    `Discrete(18)` actions (the game's minimal set without
    `full_action_space`).

  Raises:
    ValueError: an unknown game, a non-positive `max_episode_frames`, or a
      field's flag not defined (what `AtariConfig.of` raises).
    TypeError: `config` is neither an `AtariConfig` nor absl flags.
  """
  config = env_config.AtariConfig.of(config)
  game = check_game_name(config.game)
  if int(max_episode_frames) <= 0:
    raise ValueError(
        f'max_episode_frames must be positive, got {max_episode_frames}')
  repeat_action_probability = 0.25 if config.sticky_actions else 0.0
  env = gymnasium.make(
      f'{game}{_ID_SUFFIX}',
      full_action_space=bool(config.full_action_space),
      repeat_action_probability=repeat_action_probability,
      frameskip=1,
      max_num_frames_per_episode=0,
      obs_type='ram',
      disable_env_checker=True)
  env = _SeedOnFirstReset(env, int(env_id))
  env.action_space.seed(int(env_id))
  env = TimeLimit(env, max_episode_steps=int(max_episode_frames))
  return atari_preprocessing.AtariPreprocessing(
      env,
      frame_skip=config.num_action_repeats,
      max_random_noops=config.max_random_noops)
