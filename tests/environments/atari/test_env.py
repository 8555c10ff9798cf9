"""Tests for the Atari env factory and preprocessing (real ALE, no TF)."""

import os
import subprocess
import sys
import textwrap

import ale_py
import cv2
import gymnasium
import numpy as np
import pytest

from seed_rl.environments.atari import atari_preprocessing
from seed_rl.environments.atari import env as atari_env
from seed_rl.environments.atari import env_config

gymnasium.register_envs(ale_py)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

UP = 2  # Indices in the full (18) action set.
DOWN = 5


def _paddle_action(step):
  """Moves the Pong paddle up and down so the screen keeps changing."""
  return UP if (step // 8) % 2 == 0 else DOWN


def _config(**overrides):
  return env_config.AtariConfig(**{'max_random_noops': 0, **overrides})


class FrameRecorder(gymnasium.Wrapper):
  """Records the grayscale screen and reward after every emulator frame."""

  def __init__(self, env):
    super().__init__(env)
    self.frames = []
    self.rewards = []

  def step(self, action):
    result = self.env.step(action)
    self.frames.append(self.env.unwrapped.ale.getScreenGrayscale())
    self.rewards.append(result[1])
    return result


def _recorded_pong(frame_skip, game='Pong', **kwargs):
  inner = gymnasium.make(
      f'{game}NoFrameskip-v4', full_action_space=True, frameskip=1,
      repeat_action_probability=0.0, max_num_frames_per_episode=0,
      disable_env_checker=True)
  recorder = FrameRecorder(inner)
  return recorder, atari_preprocessing.AtariPreprocessing(
      recorder, frame_skip=frame_skip, **kwargs)


def _resize(frame):
  return cv2.resize(frame, (84, 84), interpolation=cv2.INTER_LINEAR)[..., None]


@pytest.mark.timeout(60)
def test_minimal_action_set_when_not_full_action_space():
  env = atari_env.create_environment(0, _config(full_action_space=False))
  assert env.action_space == gymnasium.spaces.Discrete(6)  # Pong's minimal set.
  env.reset()
  env.step(5)
  env.close()


@pytest.mark.timeout(60)
def test_create_reset_step_close():
  env = atari_env.create_environment(0, _config())
  assert env.observation_space == gymnasium.spaces.Box(
      0, 255, (84, 84, 1), np.uint8)
  assert env.action_space == gymnasium.spaces.Discrete(18)
  obs, info = env.reset()
  assert obs.shape == (84, 84, 1) and obs.dtype == np.uint8
  assert 'lives' in info
  obs, reward, terminated, truncated, info = env.step(UP)
  assert obs.shape == (84, 84, 1) and obs.dtype == np.uint8
  assert isinstance(reward, float)
  assert terminated is False and truncated is False
  assert info['episode_frame_number'] == 4
  # Frame skipping is done by the preprocessing, ALE itself steps 1 frame;
  # the one episode limit is the TimeLimit (ALE's own limit is off).
  assert isinstance(env.env, gymnasium.wrappers.TimeLimit)
  assert env.env._max_episode_steps == 108_000  # pylint: disable=protected-access
  ale = env.unwrapped.ale
  assert ale.getInt('max_num_frames_per_episode') == 0
  assert ale.getFloat('repeat_action_probability') == 0.0
  env.close()


@pytest.mark.timeout(60)
def test_sticky_actions():
  env = atari_env.create_environment(0, _config(sticky_actions=True))
  ale = env.unwrapped.ale
  assert ale.getFloat('repeat_action_probability') == pytest.approx(0.25)
  env.close()


@pytest.mark.parametrize('frame_skip', [1, 2, 4])
@pytest.mark.timeout(60)
def test_observation_is_latest_pooled_frame(frame_skip):
  """frame_skip 1 returns the latest frame (the original froze), >1 pools."""
  recorder, env = _recorded_pong(frame_skip)
  obs0, _ = env.reset(seed=0)
  observations = [obs0]
  # Pong's screen is static for ~58 frames after a reset.
  for i in range(150):
    obs, _, _, _, _ = env.step(_paddle_action(i))
    observations.append(obs)
    if frame_skip == 1:
      expected = recorder.frames[-1]
    else:
      expected = np.maximum(recorder.frames[-1], recorder.frames[-2])
    np.testing.assert_array_equal(obs, _resize(expected))
  assert len(recorder.frames) == 150 * frame_skip
  distinct = {o.tobytes() for o in observations}
  assert len(distinct) > 10, 'observations should change over the episode'


@pytest.mark.parametrize('num_action_repeats', [1, 4])
@pytest.mark.timeout(60)
def test_observations_change_through_create_environment(num_action_repeats):
  env = atari_env.create_environment(
      1, _config(num_action_repeats=num_action_repeats))
  obs0, _ = env.reset()
  observations = [env.step(_paddle_action(i))[0] for i in range(150)]
  assert not all(np.array_equal(o, obs0) for o in observations)
  assert len({o.tobytes() for o in observations}) > 10
  # The last observation shows the current screen (max-pooled with the
  # previous frame when skipping frames, which can only brighten pixels).
  current = _resize(env.unwrapped.ale.getScreenGrayscale())
  if num_action_repeats == 1:
    np.testing.assert_array_equal(observations[-1], current)
  else:
    assert np.all(observations[-1] >= current)
  env.close()


@pytest.mark.timeout(60)
def test_reward_sums_over_skipped_frames():
  recorder, env = _recorded_pong(4)
  env.reset(seed=0)
  nonzero = 0
  for _ in range(600):
    start = len(recorder.rewards)
    _, reward, terminated, truncated, _ = env.step(0)
    assert reward == sum(recorder.rewards[start:])
    nonzero += reward != 0
    assert not terminated and not truncated
    if nonzero >= 2:
      break
  assert nonzero >= 2, 'Pong should give points within 2400 frames'


@pytest.mark.parametrize('num_action_repeats,expected_steps',
                         [(4, 13), (1, 50), (3, 17)])
@pytest.mark.timeout(60)
def test_episode_limit_counts_emulator_frames(num_action_repeats,
                                              expected_steps):
  env = atari_env.create_environment(
      0, _config(num_action_repeats=num_action_repeats), max_episode_frames=50)
  for _ in range(2):  # The limit restarts with every episode.
    env.reset()
    for step in range(1, 100):
      _, _, terminated, truncated, info = env.step(UP)
      if terminated or truncated:
        break
    assert (step, terminated, truncated) == (expected_steps, False, True)
    assert info['episode_frame_number'] == 50
  env.close()


@pytest.mark.timeout(60)
def test_episode_limit_counts_random_noops():
  """As in the original, no-ops at reset run through the frame limit."""
  env = atari_env.create_environment(0, _config(max_random_noops=30),
                                     max_episode_frames=100)
  env.reset()
  noops = env.unwrapped.ale.getEpisodeFrameNumber()
  steps = 0
  while True:
    steps += 1
    _, _, terminated, truncated, info = env.step(0)
    if terminated or truncated:
      break
  assert truncated and info['episode_frame_number'] == 100
  assert steps == -(-(100 - noops) // 4)


@pytest.mark.timeout(60)
def test_random_noops_are_seeded():
  def noop_counts(env_id, resets=6):
    env = atari_env.create_environment(env_id, _config(max_random_noops=30))
    counts = []
    for _ in range(resets):
      env.reset()
      counts.append(env.unwrapped.ale.getEpisodeFrameNumber())
    env.close()
    return counts

  counts = noop_counts(3)
  assert all(1 <= c < 30 for c in counts)
  assert len(set(counts)) > 1
  assert noop_counts(3) == counts  # same env id, same no-ops
  assert noop_counts(4) != counts

  env = atari_env.create_environment(0, _config(max_random_noops=0))
  env.reset()
  assert env.unwrapped.ale.getEpisodeFrameNumber() == 0
  env.close()


@pytest.mark.timeout(60)
def test_same_env_id_is_reproducible_with_sticky_actions():
  def rollout(env_id, seed=None):
    env = atari_env.create_environment(
        env_id, _config(sticky_actions=True, max_random_noops=30))
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(0)
    frames = [obs]
    for _ in range(50):
      frames.append(env.step(int(rng.integers(18)))[0])
    env.close()
    return np.stack(frames)

  reference = rollout(5)
  np.testing.assert_array_equal(rollout(5), reference)
  # The env id is the default seed of the first reset; an explicit one wins.
  np.testing.assert_array_equal(rollout(0, seed=5), reference)
  assert not np.array_equal(rollout(5, seed=6), reference)


@pytest.mark.timeout(60)
def test_terminal_on_life_loss():
  _, env = _recorded_pong(4, game='Breakout', terminal_on_life_loss=True)
  env.reset(seed=0)
  lives = env.lives
  assert lives == 5
  env.step(1)  # FIRE launches the ball; then the paddle stays put.
  for _ in range(500):
    _, _, terminated, truncated, _ = env.step(0)
    if terminated:
      break
  assert terminated and not truncated
  assert env.lives == lives - 1
  assert not env.game_over


@pytest.mark.timeout(60)
def test_preprocessing_errors():
  inner = gymnasium.make('PongNoFrameskip-v4', disable_env_checker=True)
  with pytest.raises(ValueError, match='Frame skip'):
    atari_preprocessing.AtariPreprocessing(inner, frame_skip=0)
  with pytest.raises(ValueError, match='screen size'):
    atari_preprocessing.AtariPreprocessing(inner, screen_size=-1)
  with pytest.raises(ValueError, match='max_random_noops'):
    atari_preprocessing.AtariPreprocessing(inner, max_random_noops=-1)
  with pytest.raises(ValueError, match='ALE'):
    atari_preprocessing.AtariPreprocessing(gymnasium.make('CartPole-v1'))
  inner.close()


@pytest.mark.timeout(60)
def test_unknown_game():
  with pytest.raises(ValueError, match=r"Unknown Atari game 'Pongg'.*'Pong'"):
    atari_env.create_environment(0, _config(game='Pongg'))
  with pytest.raises(ValueError, match="'MsPacman'"):
    atari_env.check_game_name('mspacman')
  names = atari_env.atari_game_names()
  assert 'Pong' in names and 'MsPacman' in names and len(names) > 50
  with pytest.raises(ValueError, match='max_episode_frames'):
    atari_env.create_environment(0, _config(), max_episode_frames=0)


@pytest.mark.timeout(60)
def test_default_num_action_repeats():
  assert atari_env.ATARI_DEFAULT_NUM_ACTION_REPEATS == 4


@pytest.mark.timeout(60)
def test_no_tensorflow_import():
  code = textwrap.dedent("""
      import sys
      from absl import flags
      import numpy as np
      from seed_rl.common import env_wrappers
      from seed_rl.environments.atari import env as atari_env
      flags.FLAGS(['program', '--sticky_actions'])  # The original's API: the flags.
      batched = env_wrappers.BatchedEnvironment(
          atari_env.create_environment, 2, 10, flags.FLAGS)
      obs = batched.reset()
      assert obs.shape == (2, 84, 84, 1) and obs.dtype == np.uint8, obs.shape
      for _ in range(5):
        obs, rewards, dones, _ = batched.step(np.array([2, 3]))
        obs = batched.reset_if_done(dones)
      batched.close()
      assert 'tensorflow' not in sys.modules, 'tensorflow was imported'
      print('OK')
  """)
  result = subprocess.run(
      [sys.executable, '-c', code], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=50, check=False)
  assert result.returncode == 0, result.stderr
  assert 'OK' in result.stdout


_FLAGS_OF_ENV = """
import sys
from absl import flags
from seed_rl.environments.atari import env
FLAGS = flags.FLAGS
print('defaults', FLAGS['game'].default, FLAGS['max_random_noops'].default,
      FLAGS['sticky_actions'].default, FLAGS['num_action_repeats'].default)
print('defined by', {FLAGS.find_module_defining_flag(name) for name in (
    'game', 'max_random_noops', 'sticky_actions', 'full_action_space')})
FLAGS(['env'])
environment = env.create_environment(0, FLAGS)
print('default env', environment.unwrapped.spec.id, environment.frame_skip,
      environment.action_space.n)
FLAGS.unparse_flags()
FLAGS(['env', '--game=Breakout', '--max_random_noops=7', '--sticky_actions',
       '--num_action_repeats=2', '--nofull_action_space'])
environment = env.create_environment(0, FLAGS)
print('env', environment.unwrapped.spec.id, environment.max_random_noops,
      environment.frame_skip, environment.unwrapped.ale.getFloat('repeat_action_probability'),
      environment.action_space.n)
from seed_rl.environments.atari import env_flags, vtrace_main
print('tensorflow' in sys.modules)
"""


@pytest.mark.timeout(60)
def test_importing_env_defines_the_flags_of_the_original_for_create_environment():
  """As the original's module: importing `env` defines --game, --max_random_noops and
  --sticky_actions (defaults Pong, 30, false), --full_action_space and the common flags, with
  the Atari default of 4 action repeats (the original's 1 froze the observations), so that
  `create_environment(task, FLAGS)` alone builds the env the entry points build; the entry
  points import after it without defining a flag twice, and without TensorFlow."""
  result = subprocess.run(
      [sys.executable, '-c', _FLAGS_OF_ENV], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=50, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.splitlines() == [
      'defaults Pong 30 False 4',
      "defined by {'seed_rl.environments.atari.env'}",
      'default env PongNoFrameskip-v4 4 18',
      'env BreakoutNoFrameskip-v4 7 2 0.25 4',
      'False']


_ENV_NAMES_CHECK = """
import sys
from seed_rl.launch import flag_check
values = flag_check.check(sys.argv[1], ['--run_mode=learner'])
print('seed_rl.environments.atari.env' in sys.modules, values.num_action_repeats)
"""


@pytest.mark.parametrize('module,expected', [
    ('seed_rl.environments.gym.vtrace_main', 'False 1'),
    ('seed_rl.environments.mujoco.sac_main', 'False 1'),
    ('seed_rl.environments.atari.vtrace_main', 'True 4'),
])
@pytest.mark.timeout(60)
def test_only_atari_entry_points_get_the_atari_default_of_action_repeats(module, expected):
  """`env` sets --num_action_repeats' default on import: the checks of another environment's
  flags (flag_check, env_names) must not import it, or its processes would repeat every action
  4 times (and MuJoCo's would refuse to start)."""
  result = subprocess.run(
      [sys.executable, '-c', _ENV_NAMES_CHECK, module], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=50, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.splitlines()[-1] == expected
