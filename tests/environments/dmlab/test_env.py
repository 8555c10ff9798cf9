"""Tests of the DeepMind Lab env against the fake engine (tests/environments/dmlab/fake)."""

import hashlib
import os
import types

import gymnasium
import numpy as np
import pytest

from seed_rl.common import env_wrappers
from seed_rl.environments.dmlab import env as dmlab_env
from tests.environments.dmlab.conftest import make_config

FORWARD, BACKWARD, LOOK_LEFT, FIRE = 0, 1, 4, 8


def _create(env_id=0, **overrides):
  return dmlab_env.create_environment(env_id, make_config(**overrides))


@pytest.mark.timeout(30)
def test_create_environment_settings_and_spaces(fake_lab):
  env = _create()
  lab = env.lab
  assert lab.level == 'contributed/dmlab30/explore_goal_locations_small'
  assert lab.observation_names == ['RGB_INTERLEAVED']
  # The engine takes strings only (the fake raises otherwise, as the real one does).
  assert lab.config == {'width': '96', 'height': '72', 'logLevel': 'WARN'}
  assert lab.renderer == 'software'
  assert lab.level_cache is None
  assert env.action_space == gymnasium.spaces.Discrete(9)
  assert env.observation_space == gymnasium.spaces.Box(0, 255, (72, 96, 3), np.uint8)
  observation, info = env.reset()
  assert observation.shape == (72, 96, 3) and observation.dtype == np.uint8
  assert env.observation_space.contains(observation)
  assert info == {'level_seed': lab.reset_seeds[-1]}


@pytest.mark.timeout(30)
def test_width_height_flags_set_the_observation_shape(fake_lab):
  env = _create(width=32, height=24)
  assert env.observation_space.shape == (24, 32, 3)
  assert env.reset()[0].shape == (24, 32, 3)


@pytest.mark.timeout(30)
@pytest.mark.parametrize('game, level', [
    ('rooms_watermaze', 'contributed/dmlab30/rooms_watermaze'),
    ('rooms_collect_good_objects_test', 'contributed/dmlab30/rooms_collect_good_objects_test'),
    ('contributed/dmlab30/rooms_watermaze', 'contributed/dmlab30/rooms_watermaze'),
    ('seekavoid_arena_01', 'seekavoid_arena_01'),
    ('tests/empty_room_test', 'tests/empty_room_test'),
])
def test_dmlab30_names_get_the_contributed_prefix(fake_lab, game, level):
  env = _create(game=game)
  assert env.level == level
  assert env.lab.level == level


@pytest.mark.timeout(30)
def test_unknown_level_is_the_engines_error(fake_lab):
  with pytest.raises(RuntimeError, match='no_such_level'):
    _create(game='no_such_level')


@pytest.mark.timeout(30)
def test_each_action_reaches_the_engine_as_its_raw_vector(fake_lab):
  env = _create()
  env.reset()
  expected = [
      (0, 0, 0, 1, 0, 0, 0),     # forward
      (0, 0, 0, -1, 0, 0, 0),    # backward
      (0, 0, -1, 0, 0, 0, 0),    # strafe left
      (0, 0, 1, 0, 0, 0, 0),     # strafe right
      (-20, 0, 0, 0, 0, 0, 0),   # look left
      (20, 0, 0, 0, 0, 0, 0),    # look right
      (-20, 0, 0, 1, 0, 0, 0),   # look left + forward
      (20, 0, 0, 1, 0, 0, 0),    # look right + forward
      (0, 0, 0, 0, 1, 0, 0),     # fire
  ]
  assert [tuple(a) for a in dmlab_env.DEFAULT_ACTION_SET] == expected
  # Actors pass numpy integers from the learner's int64 actions.
  for action in [np.int64(i) for i in range(9)]:
    env.step(action)
  assert env.lab.actions == [(vector, 4) for vector in expected]
  for bad in (-1, 9):
    with pytest.raises(ValueError, match='not in Discrete'):
      env.step(bad)


@pytest.mark.timeout(30)
def test_custom_action_set(fake_lab):
  env = dmlab_env.DmLab('seekavoid_arena_01', 2, seed=1, is_test=False,
                        config={'width': 8, 'height': 6},
                        action_set=((0, 0, 0, 1, 0, 0, 0), (0, 0, 0, 0, 0, 1, 0)))
  assert env.action_space.n == 2
  env.reset()
  env.step(1)
  assert env.lab.actions == [((0, 0, 0, 0, 0, 1, 0), 2)]


@pytest.mark.timeout(30)
@pytest.mark.parametrize('repeats', [1, 3, 4])
def test_action_repeats_are_engine_frames_and_rewards_are_summed(fake_lab, repeats):
  env = _create(num_action_repeats=repeats)
  first, _ = env.reset()
  total_frames = 0
  for step in range(6):
    observation, reward, terminated, truncated, info = env.step(FORWARD)
    total_frames += repeats
    assert env.lab.actions[-1] == ((0, 0, 0, 1, 0, 0, 0), repeats)
    assert env.lab.num_steps() == total_frames
    assert reward == pytest.approx(sum(env.lab.frame_rewards[-repeats:]))
    assert isinstance(reward, float)
    assert (terminated, truncated, info) == (False, False, {})
  # The fake pays 0.1 per forward frame (plus 10 at the goal, 5 or more frames away).
  assert sum(env.lab.frame_rewards) >= 0.1 * total_frames - 1e-9
  # Observations change with the frames and the actions.
  assert not np.array_equal(first, observation)
  looked = env.step(LOOK_LEFT)[0]
  assert not np.array_equal(looked[:, :, 2], observation[:, :, 2])


@pytest.mark.timeout(30)
def test_num_action_repeats_must_be_positive(fake_lab):
  with pytest.raises(ValueError, match='num_action_repeats'):
    _create(num_action_repeats=0)


def _reset_seeds(env, resets=3):
  for _ in range(resets):
    env.reset()
  return list(env.lab.reset_seeds)


@pytest.mark.timeout(30)
def test_episode_seeds_come_from_a_per_env_generator_seeded_with_env_id_plus_one(fake_lab):
  seeds_3 = _reset_seeds(_create(env_id=3))
  assert _reset_seeds(_create(env_id=3)) == seeds_3
  rng = np.random.RandomState(4)
  assert seeds_3 == [rng.randint(0, 2**31 - 1) for _ in range(3)]
  assert all(isinstance(seed, int) and 0 <= seed < 2**31 - 1 for seed in seeds_3)
  seeds_4 = _reset_seeds(_create(env_id=4))
  assert len(set(seeds_3 + seeds_4)) == 6


@pytest.mark.timeout(30)
def test_a_reset_seed_reseeds_the_generator(fake_lab):
  envs = [_create(env_id=env_id) for env_id in (0, 7)]
  for env in envs:
    env.reset(seed=123)
    env.reset()
  assert envs[0].lab.reset_seeds == envs[1].lab.reset_seeds
  rng = np.random.RandomState(123)
  assert envs[0].lab.reset_seeds == [rng.randint(0, 2**31 - 1) for _ in range(2)]


@pytest.mark.timeout(30)
def test_batched_environment_gives_each_env_its_own_reproducible_seeds(fake_lab):
  config = make_config()

  def first_seeds():
    batched = env_wrappers.BatchedEnvironment(
        lambda env_id, unused_flags: dmlab_env.create_environment(env_id, config), 2, 2,
        types.SimpleNamespace(seed=None))
    batched.reset()
    batched.reset_if_done([True, True])
    seeds = [env.lab.reset_seeds for env in batched.envs]
    batched.close()
    return seeds

  seeds = first_seeds()
  assert seeds == first_seeds()
  assert seeds[0] != seeds[1]


@pytest.mark.timeout(30)
def test_is_test_selects_hold_out_levels_and_the_evaluation_mixer_seed(fake_lab):
  config = {'width': 96, 'height': 72}
  env = dmlab_env.DmLab('rooms_collect_good_objects_test', 4, seed=1, is_test=True,
                        config=config)
  assert env.lab.config == {'width': '96', 'height': '72', 'allowHoldOutLevels': 'true',
                            'mixerSeed': str(0x600D5EED)}
  assert config == {'width': 96, 'height': 72}  # The caller's dict is left alone.
  train = dmlab_env.DmLab('rooms_collect_good_objects_train', 4, seed=1, is_test=False,
                          config=config)
  assert 'allowHoldOutLevels' not in train.lab.config
  assert 'mixerSeed' not in train.lab.config


@pytest.mark.timeout(30)
def test_paths_and_booleans_in_the_config(fake_lab, tmp_path):
  env = dmlab_env.DmLab('lt_chasm', 4, seed=1, is_test=False,
                        config={'width': 8, 'height': 6, 'botCount': 2, 'someFlag': True},
                        homepath=str(tmp_path), dataset_path='/data/brady')
  assert env.lab.config == {'width': '8', 'height': '6', 'botCount': '2', 'someFlag': 'true',
                            'datasetPath': '/data/brady'}
  assert env.lab.runfiles_path == str(tmp_path)
  assert fake_lab.runfiles_path() == str(tmp_path)


@pytest.mark.timeout(30)
def test_done_when_the_episode_stops_running_with_the_last_observation(fake_lab, monkeypatch):
  monkeypatch.setenv('FAKE_DMLAB_EPISODE_FRAMES', '10')
  env = _create(num_action_repeats=4)
  env.reset()
  observation, _, done, _, _ = env.step(FORWARD)  # frames 1-4
  assert not done
  before_end, _, done, _, _ = env.step(FORWARD)  # frames 5-8
  assert not done
  last, reward, done, truncated, _ = env.step(FORWARD)  # frames 9-10: the episode ends
  assert done and not truncated
  assert not env.lab.is_running()
  assert env.lab.num_steps() == 12  # The engine counts the requested frames.
  assert len(env.lab.frame_rewards) == 10  # but plays only those of the episode.
  assert reward == pytest.approx(sum(env.lab.frame_rewards[-2:]))
  # Not None (the engine has no observation now): the last one of the episode.
  assert last is before_end
  with pytest.raises(RuntimeError, match='call reset'):
    env.step(FORWARD)
  observation, _ = env.reset()
  assert env.lab.is_running() and observation[0, 0, 0] == 0
  assert not env.step(FORWARD)[2]


@pytest.mark.timeout(30)
def test_step_before_reset_is_a_clear_error(fake_lab):
  with pytest.raises(RuntimeError, match='before reset'):
    _create().step(FORWARD)


@pytest.mark.timeout(30)
def test_render_returns_the_latest_observation(fake_lab):
  env = _create()
  assert env.render() is None
  env.reset()
  observation = env.step(FORWARD)[0]
  np.testing.assert_array_equal(env.render(), observation)


def _cache_path(cache_dir, key):
  digest = hashlib.md5(key.encode('utf-8')).hexdigest()
  return os.path.join(cache_dir, digest[:3], digest[3:])


@pytest.mark.timeout(30)
def test_level_cache_miss_writes_and_hit_fetches(fake_lab, tmp_path):
  cache_dir = str(tmp_path / 'cache')
  first = _create(env_id=0, level_cache_dir=cache_dir)
  assert isinstance(first.lab.level_cache, dmlab_env.LevelCache)
  first.reset(seed=5)
  (_, key, hit), write = first.lab.cache_events
  assert not hit and write == ('write', key)
  path = _cache_path(cache_dir, key)
  assert first.lab.level_cache.get_path(key) == path
  with open(path, 'rb') as f:
    assert f.read() == first.lab._compile_map(key)  # pylint: disable=protected-access
  assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]  # No temporary left.

  # Another actor's env with the same episode seed fetches the compiled map.
  second = _create(env_id=9, level_cache_dir=cache_dir)
  second.reset(seed=5)
  assert second.lab.cache_events == [('fetch', key, True)]
  # A new seed is a new map.
  second.reset()
  assert second.lab.cache_events[-2][2] is False
  assert second.lab.cache_events[-1][0] == 'write'
  files = [os.path.join(d, f) for d, _, fs in os.walk(cache_dir) for f in fs]
  assert len(files) == 2


@pytest.mark.timeout(30)
def test_level_cache_layout_and_file_operations(tmp_path):
  cache = dmlab_env.LevelCache(str(tmp_path / 'cache'))
  key = 'contributed/dmlab30/rooms_watermaze:seed=1'
  digest = hashlib.md5(key.encode('utf-8')).hexdigest()
  assert cache.get_path(key) == str(tmp_path / 'cache' / digest[:3] / digest[3:])
  target = tmp_path / 'map.pk3'
  assert cache.fetch(key, str(target)) is False
  assert not target.exists()
  source = tmp_path / 'compiled.pk3'
  source.write_bytes(b'map one')
  cache.write(key, str(source))
  source.write_bytes(b'map two')
  cache.write(key, str(source))  # Already cached (e.g. by another actor): kept.
  assert cache.fetch(key, str(target)) is True
  assert target.read_bytes() == b'map one'


@pytest.mark.timeout(30)
def test_level_cache_errors_do_not_stop_the_actor(tmp_path):
  blocker = tmp_path / 'not_a_directory'
  blocker.write_text('a file where the cache directory should be')
  cache = dmlab_env.LevelCache(str(blocker))
  source = tmp_path / 'compiled.pk3'
  source.write_bytes(b'map')
  cache.write('key', str(source))  # Logged, not raised.
  assert cache.fetch('key', str(tmp_path / 'out.pk3')) is False
  with pytest.raises(ValueError, match='cache directory'):
    dmlab_env.LevelCache('')


@pytest.mark.timeout(60)
def test_level_cache_remote_urls_go_through_tf_io_gfile(tmp_path):
  tf = pytest.importorskip('tensorflow')
  cache_dir = 'ram://seed_rl_dmlab_test_cache'
  cache = dmlab_env.LevelCache(cache_dir)
  key = 'lt_chasm:seed=3'
  target = tmp_path / 'map.pk3'
  assert cache.fetch(key, str(target)) is False
  source = tmp_path / 'compiled.pk3'
  source.write_bytes(b'remote map')
  cache.write(key, str(source))
  cache.write(key, str(source))
  assert tf.io.gfile.exists(cache.get_path(key))
  assert cache.get_path(key).startswith(cache_dir + '/')
  assert cache.fetch(key, str(target)) is True
  assert target.read_bytes() == b'remote map'


@pytest.mark.timeout(30)
def test_close_releases_the_engine(fake_lab):
  env = _create()
  env.reset()
  env.close()
  assert env.lab.closed and not env.lab.is_running()
