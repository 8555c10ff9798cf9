"""DeepMind Lab environment for SEED RL actors (Gymnasium API).

`DmLab` wraps a `deepmind_lab.Lab` as the original did:

- 9 discrete actions, each sent to the engine as the 7-int raw action vector of
  `DEFAULT_ACTION_SET` (look left/right, strafe, move, fire, ...);
- observations are the engine's `RGB_INTERLEAVED` frames, `[height, width, 3]` uint8
  (72x96 with the default flags);
- one agent step is `num_action_repeats` engine frames, done by the engine itself
  (`Lab.step(action, num_steps=...)` returns the reward summed over them);
- the seed of every episode is drawn from a per-env random generator (seeded with `env_id + 1`
  by `create_environment`, or with the seed given to `reset`), so runs are reproducible and
  every env plays different levels;
- DMLab-30 level names get the `contributed/dmlab30/` prefix; `is_test` selects the held-out
  test levels (`allowHoldOutLevels`) and the evaluation mixer seed;
- an optional level cache shares compiled maps between actors (`LevelCache`).

Actor-side module: it imports neither TensorFlow nor `deepmind_lab` at import time.
`deepmind_lab` is imported when the first env is created, and a missing module gives an
ImportError that says how to get it (`deepmind_lab_missing_message`). The level cache uses the
standard library for local directories and imports TensorFlow (`tf.io.gfile`) only for remote
URLs such as `gs://bucket/cache`.
"""

import hashlib
import importlib
import os
import shutil
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from absl import logging
import gymnasium
import numpy as np

from seed_rl.environments.dmlab import env_config
from seed_rl.environments.dmlab import games

# Frames per agent step, the default of the DMLab entry points (`env_config`).
DMLAB_DEFAULT_NUM_ACTION_REPEATS = env_config.DMLAB_DEFAULT_NUM_ACTION_REPEATS

# Raw DMLab actions: (look left/right pixels, look down/up pixels, strafe left/right,
# move back/forward, fire, jump, crouch).
DEFAULT_ACTION_SET = (
    (0, 0, 0, 1, 0, 0, 0),    # Forward
    (0, 0, 0, -1, 0, 0, 0),   # Backward
    (0, 0, -1, 0, 0, 0, 0),   # Strafe left
    (0, 0, 1, 0, 0, 0, 0),    # Strafe right
    (-20, 0, 0, 0, 0, 0, 0),  # Look left
    (20, 0, 0, 0, 0, 0, 0),   # Look right
    (-20, 0, 0, 1, 0, 0, 0),  # Look left + forward
    (20, 0, 0, 1, 0, 0, 0),   # Look right + forward
    (0, 0, 0, 0, 1, 0, 0),    # Fire
)

OBSERVATION_NAME = 'RGB_INTERLEAVED'

DMLAB30_PREFIX = 'contributed/dmlab30/'

# The mixer seed DeepMind Lab documents for evaluation runs (it changes the level seeds so the
# evaluation episodes differ from the training ones).
EVALUATION_MIXER_SEED = 0x600D5EED

# Episode seeds are drawn in [0, 2**31 - 1): the engine takes a C int.
_MAX_ENGINE_SEED = 2**31 - 1

DOCKER_BUILD_COMMAND = 'docker build -f docker/Dockerfile.dmlab -t seed_rl:dmlab .'
DOCKER_RUN_COMMAND = 'docker run --gpus all -it --rm seed_rl:dmlab ./run_local.sh dmlab vtrace 4'


def deepmind_lab_missing_message(error: ImportError | None = None) -> str:
  """What to tell a user whose Python cannot import `deepmind_lab`, and how to get it.

  Args:
    error: the ImportError raised by `import deepmind_lab`. When the module exists but fails
      to load (e.g. a missing system library), its message is included.
  """
  if error is None or getattr(error, 'name', None) == 'deepmind_lab':
    what = (f'DeepMind Lab (the Python module deepmind_lab) is not installed for this Python '
            f'({sys.executable}).')
  else:
    what = (f'DeepMind Lab (the Python module deepmind_lab) is installed but cannot be '
            f'imported: {error}')
  return (
      f'{what}\n'
      'DeepMind Lab has no pip wheel; it is built from source with Bazel. The Docker image '
      'docker/Dockerfile.dmlab does that. From the root of the seed_rl repository:\n'
      f'  {DOCKER_BUILD_COMMAND}\n'
      f'  {DOCKER_RUN_COMMAND}\n'
      'To build it on your machine instead, follow the steps in docker/Dockerfile.dmlab '
      '(bazel build -c opt //python/pip_package:build_pip_package, then pip install the '
      'wheel it makes).')


def import_deepmind_lab() -> Any:
  """Imports and returns the `deepmind_lab` module.

  Raises:
    ImportError: with `deepmind_lab_missing_message()` when it cannot be imported.
  """
  try:
    return importlib.import_module('deepmind_lab')
  except ImportError as e:
    raise ImportError(deepmind_lab_missing_message(e), name='deepmind_lab') from e


def exit_if_deepmind_lab_missing() -> None:
  """Ends the process with `deepmind_lab_missing_message()` (exit status 1) if needed.

  Entry points call this first, so neither a learner nor an actor starts anything (no
  TensorFlow, no server, no connection) without the engine.
  """
  try:
    import_deepmind_lab()
  except ImportError as e:
    sys.exit(f'seed_rl: {e}')


def level_name(game: str) -> str:
  """The engine's level name of `game`: DMLab-30 names get the `contributed/dmlab30/` prefix.

  Other names (e.g. 'seekavoid_arena_01', 'tests/empty_room_test', or an already prefixed
  name) are returned unchanged.
  """
  return DMLAB30_PREFIX + game if game in games.ALL_GAMES else game


def _is_remote(path: str) -> bool:
  return '://' in path


class LevelCache:
  """A shared cache of compiled DeepMind Lab maps (.pk3 files), passed to `deepmind_lab.Lab`.

  Procedurally generated levels compile a new map for every level seed, which takes seconds;
  actors sharing a cache directory compile each map once. The engine calls `fetch(key,
  pk3_path)` before compiling (True: the map was copied to `pk3_path`) and `write(key,
  pk3_path)` after compiling one. A key is stored at `<cache_dir>/<md5[:3]>/<md5[3:]>`, where
  md5 is the hex MD5 of the key (the original's layout, so existing caches stay usable).

  `cache_dir` is a local (or mounted network) directory, handled with the standard library so
  that actors stay free of TensorFlow; a remote URL such as `gs://bucket/level_cache` goes
  through `tf.io.gfile`, which imports TensorFlow (its memory and import time in every actor) on first use.
  Errors other than a missing entry are logged and treated as a miss (fetch) or skipped
  (write): a cache must never stop an actor.
  """

  def __init__(self, cache_dir: str):
    if not cache_dir:
      raise ValueError('LevelCache needs a cache directory, got an empty one.')
    self._cache_dir = str(cache_dir)
    self._remote = _is_remote(self._cache_dir)

  @property
  def cache_dir(self) -> str:
    return self._cache_dir

  def get_path(self, key: str) -> str:
    """Where the map of `key` is stored."""
    digest = hashlib.md5(key.encode('utf-8'), usedforsecurity=False).hexdigest()
    return os.path.join(self._cache_dir, digest[:3], digest[3:])

  def fetch(self, key: str, pk3_path: str) -> bool:
    """Copies the cached map of `key` to `pk3_path`; False when there is none."""
    path = self.get_path(key)
    if self._remote:
      return self._fetch_remote(path, pk3_path)
    try:
      shutil.copyfile(path, pk3_path)
      return True
    except FileNotFoundError:
      return False
    except OSError as e:
      logging.warning('Level cache: cannot read %s (%s); compiling the level instead.', path, e)
      return False

  def write(self, key: str, pk3_path: str) -> None:
    """Stores the map at `pk3_path` under `key`, unless another actor already did.

    The file is copied under a unique temporary name and then renamed, so a concurrent
    `fetch` never sees a partial map.
    """
    path = self.get_path(key)
    if self._remote:
      self._write_remote(path, pk3_path)
      return
    if os.path.exists(path):
      return
    temporary = f'{path}.tmp-{uuid.uuid4().hex}'
    try:
      os.makedirs(os.path.dirname(path), exist_ok=True)
      shutil.copyfile(pk3_path, temporary)
      os.replace(temporary, path)
    except OSError as e:
      logging.warning('Level cache: cannot write %s (%s).', path, e)
      try:
        os.remove(temporary)
      except OSError:
        pass

  def _fetch_remote(self, path: str, pk3_path: str) -> bool:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote caches only)
    try:
      tf.io.gfile.copy(path, pk3_path, overwrite=True)
      return True
    except tf.errors.NotFoundError:
      return False
    except tf.errors.OpError as e:
      logging.warning('Level cache: cannot read %s (%s); compiling the level instead.', path,
                      e.message)
      return False

  def _write_remote(self, path: str, pk3_path: str) -> None:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote caches only)
    try:
      if tf.io.gfile.exists(path):
        return
      tf.io.gfile.makedirs(os.path.dirname(path))
      tf.io.gfile.copy(pk3_path, path, overwrite=False)
    except tf.errors.AlreadyExistsError:
      pass
    except tf.errors.OpError as e:
      logging.warning('Level cache: cannot write %s (%s).', path, e.message)


def _config_value(value: Any) -> str:
  """DeepMind Lab settings are strings; booleans are spelled the Lua way ('true'/'false')."""
  if isinstance(value, (bool, np.bool_)):
    return 'true' if value else 'false'
  return str(value)


class DmLab(gymnasium.Env):
  """A DeepMind Lab level as a Gymnasium environment with discrete actions.

  `step` returns `(observation, reward, terminated, truncated, info)`. The episode ends when
  the engine stops running (the level's time limit or its own end condition): `terminated` is
  True then, as the original's `done` (the engine does not tell a time limit apart). The
  engine has no observation after the end, where the original returned None; this env returns
  the last observation of the episode instead, because the actor stacks the observations of
  all its envs into one array before it resets the finished ones (the learner never uses that
  frame: the actor sends the first frame of the next episode with `done`).
  """

  metadata: ClassVar[dict[str, Any]] = {'render_modes': ['rgb_array']}

  def __init__(self,
               game: str,
               num_action_repeats: int,
               seed: int | None,
               is_test: bool,
               config: Mapping[str, Any],
               action_set: Sequence[Sequence[int]] = DEFAULT_ACTION_SET,
               level_cache_dir: str | None = None,
               homepath: str = '',
               dataset_path: str = '',
               renderer: str = 'software'):
    """Creates the engine for one level.

    Args:
      game: level name; DMLab-30 names (see `games.ALL_GAMES`) get the `contributed/dmlab30/`
        prefix.
      num_action_repeats: engine frames per agent step (>= 1).
      seed: seed of the generator that draws every episode's level seed (None: unseeded).
      is_test: play the held-out test variants (`allowHoldOutLevels`) with the evaluation
        mixer seed.
      config: engine settings such as `width`, `height`, `logLevel`; values are converted to
        strings. Not modified.
      action_set: raw 7-int action vectors, one per discrete action.
      level_cache_dir: directory (or gs:// URL) of a level cache shared by actors; None: none.
      homepath: DeepMind Lab runfiles directory, for a `deepmind_lab` module that cannot find
        its own assets; '' keeps the module's default.
      dataset_path: directory of the image dataset of the psychlab_* levels; '': not set.
      renderer: 'software' (OSMesa, no GPU needed) or 'hardware' (EGL/GLX).
    """
    super().__init__()
    if int(num_action_repeats) < 1:
      raise ValueError(f'num_action_repeats must be at least 1, got {num_action_repeats}')
    if not action_set:
      raise ValueError('action_set is empty.')
    deepmind_lab = import_deepmind_lab()
    settings = {key: _config_value(value) for key, value in config.items()}
    if is_test:
      settings['allowHoldOutLevels'] = 'true'
      settings['mixerSeed'] = str(EVALUATION_MIXER_SEED)
    if dataset_path:
      settings['datasetPath'] = str(dataset_path)
    if homepath:
      deepmind_lab.set_runfiles_path(str(homepath))

    self._level = level_name(game)
    self._num_action_repeats = int(num_action_repeats)
    self._random_state = np.random.RandomState(seed)
    # The engine copies the action, so one array per discrete action serves every step.
    self._raw_actions = [np.array(action, dtype=np.intc) for action in action_set]
    self._lab = deepmind_lab.Lab(
        level=self._level,
        observations=[OBSERVATION_NAME],
        config=settings,
        renderer=renderer,
        level_cache=LevelCache(level_cache_dir) if level_cache_dir else None)
    self._last_observation: np.ndarray | None = None

    shape = self._observation_shape(settings)
    self.action_space = gymnasium.spaces.Discrete(len(self._raw_actions))
    self.observation_space = gymnasium.spaces.Box(0, 255, shape, dtype=np.uint8)

  def _observation_shape(self, settings: Mapping[str, str]) -> tuple[int, ...]:
    """The engine's `[height, width, 3]`; from the settings if it does not list the spec."""
    for spec in self._lab.observation_spec():
      if spec['name'] == OBSERVATION_NAME:
        return tuple(int(d) for d in spec['shape'])
    return (int(settings.get('height', 240)), int(settings.get('width', 320)), 3)

  @property
  def level(self) -> str:
    """The engine's level name (with the DMLab-30 prefix where it applies)."""
    return self._level

  @property
  def lab(self) -> Any:
    """The `deepmind_lab.Lab`, for engine features beyond this API (events, fps...)."""
    return self._lab

  def _observe(self) -> np.ndarray:
    self._last_observation = self._lab.observations()[OBSERVATION_NAME]
    return self._last_observation

  def reset(self, *, seed: int | None = None,
            options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Starts a new episode with a level seed drawn from this env's generator.

    Args:
      seed: if given, first reseeds the generator with it (Gymnasium's contract: the
        following episodes are reproducible from this seed).
      options: unused.

    Returns:
      `(observation, {'level_seed': the engine seed of this episode})`.
    """
    del options
    if seed is not None:
      self._random_state = np.random.RandomState(seed)
    level_seed = int(self._random_state.randint(0, _MAX_ENGINE_SEED))
    self._lab.reset(seed=level_seed)
    return self._observe(), {'level_seed': level_seed}

  def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
    """Plays `action` for `num_action_repeats` frames; the reward is their sum."""
    index = int(action)  # Actors pass numpy integers.
    if not 0 <= index < len(self._raw_actions):
      raise ValueError(f'Action {action!r} is not in {self.action_space}.')
    if self._last_observation is None or not self._lab.is_running():
      raise RuntimeError('DmLab.step() called before reset() or after the episode ended; '
                         'call reset() first.')
    reward = self._lab.step(self._raw_actions[index], num_steps=self._num_action_repeats)
    done = not self._lab.is_running()
    observation = self._last_observation if done else self._observe()
    return observation, float(reward), done, False, {}

  def render(self) -> np.ndarray | None:
    """The latest observation (rgb_array), None before the first reset."""
    return self._last_observation

  def close(self) -> None:
    self._lab.close()


def create_environment(env_id: int, config: Any) -> DmLab:
  """Creates the DMLab env of one actor env (the original's settings).

  Args:
    env_id: environment id; its episode-seed generator is seeded with `env_id + 1` (a seed given
      to `reset`, as `BatchedEnvironment` gives at the first reset, replaces it).
    config: an `env_config.DmLabConfig`, or absl flags holding its fields (those of
      `env_flags`; the entry points pass `FLAGS`), read with `DmLabConfig.of`.

  Raises:
    ValueError: a field's flag is not defined (what `DmLabConfig.of` raises).
    TypeError: `config` is neither a `DmLabConfig` nor absl flags.
  """
  config = env_config.DmLabConfig.of(config)
  logging.info('Creating environment: %s', config.game)
  return DmLab(
      config.game,
      config.num_action_repeats,
      seed=int(env_id) + 1,
      is_test=False,
      config={
          'width': config.width,
          'height': config.height,
          'logLevel': 'WARN',
      },
      level_cache_dir=config.level_cache_dir,
      homepath=config.homepath,
      dataset_path=config.dataset_path)
