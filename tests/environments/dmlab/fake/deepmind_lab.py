"""A stand-in for DeepMind Lab's Python module `deepmind_lab`, for tests only.

DeepMind Lab cannot be installed on the test machines (it is built from source with Bazel in
docker/Dockerfile.dmlab), so the tests put this directory on `sys.path` / PYTHONPATH. It follows
the engine's Python API (python/dmlab_module.c of DeepMind Lab) as far as a caller can see:
argument names, positions, types and the errors of wrong ones, string-only config values, the
running/terminated status, `step(action, num_steps)` returning the reward summed over the
frames, `observations()` failing outside an episode, and the level cache protocol (`fetch(key,
pk3_path) -> bool` before a map is compiled, `write(key, pk3_path)` after). Where the engine
silently misbehaves (a seed outside a C int is truncated) the fake raises, to catch the bug.

The world is a toy: the player walks along a corridor towards a goal whose distance depends on
the episode seed; every frame walking forward earns 0.1 and reaching the goal 10 (then the
player starts over). Observations are `[height, width, 3]` uint8 frames whose red channel is the
frame count, green the position and blue a gradient shifted by the view angle, so they change
with every frame and every action. Episodes last `FAKE_DMLAB_EPISODE_FRAMES` frames (environment
variable; default 5400, 90 s at 60 frames per second like explore_goal_locations_small).

Tests read what the engine saw from every `Lab` (see its attributes) and from `instances`.
"""

import hashlib
import os
import shutil
import tempfile

import numpy as np

__all__ = ['Lab', 'runfiles_path', 'set_runfiles_path', 'version']

_DMLAB30 = (
    'rooms_collect_good_objects_train', 'rooms_collect_good_objects_test',
    'rooms_exploit_deferred_effects_train', 'rooms_exploit_deferred_effects_test',
    'rooms_select_nonmatching_object', 'rooms_watermaze', 'rooms_keys_doors_puzzle',
    'language_select_described_object', 'language_select_located_object',
    'language_execute_random_task', 'language_answer_quantitative_question',
    'lasertag_one_opponent_small', 'lasertag_three_opponents_small',
    'lasertag_one_opponent_large', 'lasertag_three_opponents_large', 'natlab_fixed_large_map',
    'natlab_varying_map_regrowth', 'natlab_varying_map_randomized',
    'skymaze_irreversible_path_hard', 'skymaze_irreversible_path_varied',
    'psychlab_arbitrary_visuomotor_mapping', 'psychlab_continuous_recognition',
    'psychlab_sequential_comparison', 'psychlab_visual_search',
    'explore_object_locations_small', 'explore_object_locations_large',
    'explore_obstructed_goals_small', 'explore_obstructed_goals_large',
    'explore_goal_locations_small', 'explore_goal_locations_large',
    'explore_object_rewards_few', 'explore_object_rewards_many')
# Levels the fake knows: DMLab-30 under its real directory, plus a few classic top-level ones.
# As in DeepMind Lab, 'explore_goal_locations_small' without the prefix does not exist.
LEVELS = frozenset(['contributed/dmlab30/' + name for name in _DMLAB30] +
                   ['seekavoid_arena_01', 'lt_chasm', 'nav_maze_static_01',
                    'tests/empty_room_test'])

ACTION_SPEC = (
    {'min': -512, 'max': 512, 'name': 'LOOK_LEFT_RIGHT_PIXELS_PER_FRAME'},
    {'min': -512, 'max': 512, 'name': 'LOOK_DOWN_UP_PIXELS_PER_FRAME'},
    {'min': -1, 'max': 1, 'name': 'STRAFE_LEFT_RIGHT'},
    {'min': -1, 'max': 1, 'name': 'MOVE_BACK_FORWARD'},
    {'min': 0, 'max': 1, 'name': 'FIRE'},
    {'min': 0, 'max': 1, 'name': 'JUMP'},
    {'min': 0, 'max': 1, 'name': 'CROUCH'},
)
_ACTION_COUNT = len(ACTION_SPEC)
_FORWARD_REWARD = 0.1
_GOAL_REWARD = 10.0

DEFAULT_EPISODE_FRAMES = 5400

# Every Lab created in this process, oldest first.
instances = []

_runfiles_path = os.path.dirname(os.path.abspath(__file__))


def version():
  return '1.0'


def runfiles_path():
  return _runfiles_path


def set_runfiles_path(path):
  global _runfiles_path
  if not isinstance(path, str):
    raise TypeError(f'argument 1 must be str, not {type(path).__name__}')
  _runfiles_path = path
  return True


def _type_name(value):
  kind = type(value)
  return kind.__name__ if kind.__module__ == 'builtins' else f'{kind.__module__}.{kind.__name__}'


class Lab:
  """`deepmind_lab.Lab(level, observations, config=None, renderer=None, level_cache=None)`.

  What the engine saw, for tests: `level`, `observation_names`, `config` (the dict as given),
  `renderer`, `level_cache`, `runfiles_path`, `reset_seeds` (one per reset), `actions`
  (`(tuple of 7 ints, num_steps)` per step), `frame_rewards` (one per frame), `cache_events`
  (`('fetch', key, hit)` / `('write', key)`), `episode_frames`, `closed`.
  """

  def __init__(self, level, observations, config=None, renderer=None, level_cache=None):
    if not isinstance(level, str):
      raise TypeError(f'argument 1 must be str, not {_type_name(level)}')
    if not isinstance(observations, list):
      raise TypeError(f'argument 2 must be list, not {_type_name(observations)}')
    if config is not None and not isinstance(config, dict):
      raise TypeError(f'argument 3 must be dict, not {_type_name(config)}')
    if renderer is not None and not isinstance(renderer, str):
      raise TypeError(f'argument 4 must be str, not {_type_name(renderer)}')
    if renderer and renderer not in ('hardware', 'software'):
      raise RuntimeError(f'Failed to set renderer must be "hardware" or "software" actual '
                         f'"{renderer}"!')
    config = {} if config is None else config
    for key, value in config.items():
      if not isinstance(key, str) or not isinstance(value, str):
        # PyUnicode_AsUTF8 on a non-string.
        raise TypeError('bad argument type for built-in operation')
    if level not in LEVELS:
      raise RuntimeError(f'Failed to init environment - "Could not find level \'{level}\'"')
    for key in ('width', 'height', 'fps'):
      if key in config and not config[key].lstrip('-').isdigit():
        raise RuntimeError(f"Failed to apply setting '{key} = {config[key]}' - "
                           f'"Invalid {key}"')
    for name in observations:
      if not isinstance(name, str):
        raise TypeError('bad argument type for built-in operation')
      if name not in ('RGB_INTERLEAVED', 'RGB'):
        raise ValueError(f"Unknown observation '{name}'.")

    self.level = level
    self.observation_names = list(observations)
    self.config = dict(config)
    self.renderer = renderer
    self.level_cache = level_cache
    self.runfiles_path = _runfiles_path
    self.width = int(config.get('width', 320))
    self.height = int(config.get('height', 240))
    self.episode_frames = int(os.environ.get('FAKE_DMLAB_EPISODE_FRAMES',
                                             DEFAULT_EPISODE_FRAMES))
    self.reset_seeds = []
    self.actions = []
    self.frame_rewards = []
    self.cache_events = []
    self.closed = False
    self._running = False
    self._episode = 0
    self._num_steps = 0
    self._frame = 0
    self._position = 0
    self._yaw = 0
    self._goal = 0
    self._workdir = tempfile.mkdtemp(prefix='fake_deepmind_lab_')
    instances.append(self)

  def _check_open(self):
    if self.closed:
      raise RuntimeError('Environment is closed.')

  def _map_key(self, seed):
    # Like procedurally generated DMLab levels: one compiled map per level and seed.
    return f'{self.level}:episode_seed={seed}'

  def _compile_map(self, key):
    return hashlib.sha256(key.encode('utf-8')).digest() * 8

  def _load_map(self, seed):
    """Asks the level cache for the map of this episode and writes it there after a miss."""
    key = self._map_key(seed)
    pk3_path = os.path.join(self._workdir, f'map_{self._episode}.pk3')
    if self.level_cache is None:
      return
    hit = bool(self.level_cache.fetch(key, pk3_path))
    self.cache_events.append(('fetch', key, hit))
    if hit:
      with open(pk3_path, 'rb') as f:
        if f.read() != self._compile_map(key):
          raise RuntimeError(f'Failed to start environment - "Corrupt map from the level cache '
                             f'for key {key}"')
      return
    with open(pk3_path, 'wb') as f:
      f.write(self._compile_map(key))
    self.level_cache.write(key, pk3_path)
    self.cache_events.append(('write', key))

  def reset(self, episode=-1, seed=None):
    self._check_open()
    if not isinstance(episode, int):
      raise TypeError(f"'{_type_name(episode)}' object cannot be interpreted as an integer")
    if seed is None:
      seed = int(np.random.randint(0, 2**31 - 1))
    elif not isinstance(seed, int):
      raise ValueError(f"'seed' must be int or None, was '{_type_name(seed)}'.")
    elif not -2**31 <= seed < 2**31:
      # The engine would silently truncate it to a C int.
      raise ValueError(f'seed {seed} does not fit in a C int (the engine would truncate it).')
    if episode >= 0:
      self._episode = episode
    self._load_map(seed)
    self.reset_seeds.append(seed)
    rng = np.random.RandomState(seed)
    self._goal = int(rng.randint(5, 40))
    self._position = 0
    self._yaw = int(rng.randint(0, 360))
    self._frame = 0
    self._num_steps = 0
    self._episode += 1
    self._running = True
    return True

  def num_steps(self):
    return self._num_steps

  def is_running(self):
    return self._running and not self.closed

  def step(self, action, num_steps=1):
    self._check_open()
    if not isinstance(action, np.ndarray):
      raise TypeError(f'argument 1 must be numpy.ndarray, not {_type_name(action)}')
    if not isinstance(num_steps, int):
      raise TypeError(f"'{_type_name(num_steps)}' object cannot be interpreted as an integer")
    if not self._running:
      raise RuntimeError('Environment in wrong status to advance.')
    if action.ndim != 1 or action.shape[0] != _ACTION_COUNT:
      raise ValueError(f'action must have shape ({_ACTION_COUNT})')
    if action.dtype != np.intc:
      raise ValueError('action must have dtype np.intc')
    values = tuple(int(v) for v in action)
    self.actions.append((values, num_steps))
    look, _, _, move, _, _, _ = values
    reward = 0.0
    for _ in range(num_steps):
      frame_reward = 0.0
      self._yaw = (self._yaw + look) % 360
      self._position = max(0, self._position + move)
      if move > 0:
        frame_reward += _FORWARD_REWARD
      if self._position >= self._goal:
        frame_reward += _GOAL_REWARD
        self._position = 0
      self._frame += 1
      self.frame_rewards.append(frame_reward)
      reward += frame_reward
      if self._frame >= self.episode_frames:
        self._running = False
        break
    self._num_steps += num_steps
    return reward

  def _rgb_interleaved(self):
    frame = np.empty((self.height, self.width, 3), np.uint8)
    frame[:, :, 0] = self._frame % 256
    frame[:, :, 1] = (self._position * 6) % 256
    columns = (np.arange(self.width) * 256 // max(1, self.width) + self._yaw) % 256
    frame[:, :, 2] = columns[np.newaxis, :].astype(np.uint8)
    return frame

  def observations(self):
    self._check_open()
    if not self._running:
      raise RuntimeError('Environment in wrong status for call to observations()')
    frame = self._rgb_interleaved()
    result = {}
    for name in self.observation_names:
      result[name] = frame.copy() if name == 'RGB_INTERLEAVED' else frame.transpose(2, 0, 1).copy()
    return result

  def observation_spec(self):
    return [
        {'name': 'RGB_INTERLEAVED', 'shape': (self.height, self.width, 3), 'dtype': np.uint8},
        {'name': 'RGB', 'shape': (3, self.height, self.width), 'dtype': np.uint8},
    ]

  def action_spec(self):
    return [dict(spec) for spec in ACTION_SPEC]

  def fps(self):
    return int(self.config.get('fps', 60))

  def events(self):
    return []

  def close(self):
    if self.closed:
      return False
    self.closed = True
    self._running = False
    shutil.rmtree(self._workdir, ignore_errors=True)
    return True
