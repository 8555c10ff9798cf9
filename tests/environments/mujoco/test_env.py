"""The MuJoCo environment factory: Gymnasium's v5 MuJoCo ids, Pendulum and the toy envs.

These tests import `env`, never `env_flags` or an entry point: absl flags are global to the
process, and other tests of this process import the gym entry point (same flag names).
"""

import logging
import types

import gymnasium
import numpy as np
import pytest

from seed_rl.common import env_wrappers
from seed_rl.environments.mujoco import env as mujoco_env
from seed_rl.environments.mujoco import env_config
from seed_rl.environments.mujoco import toy_env

# Name -> (observation size, action dimension) of the envs stepped here.
GYMNASIUM_ENVS = {'HalfCheetah-v5': (17, 6), 'Hopper-v5': (11, 3), 'Pendulum-v1': (3, 1)}


def _step_randomly(env, steps, seed=0):
  """Steps `env` with random actions (resetting when an episode ends); returns the rewards."""
  env.action_space.seed(seed)
  observation, _ = env.reset(seed=seed)
  assert env.observation_space.contains(observation), observation
  rewards = []
  for _ in range(steps):
    observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert env.observation_space.contains(observation), observation
    assert isinstance(reward, np.float32), type(reward)
    assert np.isfinite(reward)
    rewards.append(reward)
    if terminated or truncated:
      observation, _ = env.reset()
      assert env.observation_space.contains(observation)
  return rewards


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', sorted(GYMNASIUM_ENVS))
@pytest.mark.parametrize('discretization', ['none', 'lin', 'log'])
def test_create_reset_step_close(name, discretization):
  observation_size, action_dim = GYMNASIUM_ENVS[name]
  env = mujoco_env.create_environment(name, discretization)
  assert env.observation_space == gymnasium.spaces.Box(
      -np.inf if name != 'Pendulum-v1' else env.observation_space.low,
      np.inf if name != 'Pendulum-v1' else env.observation_space.high, (observation_size,),
      np.float32)
  if discretization == 'none':
    assert env.action_space == gymnasium.spaces.Box(-1., 1., (action_dim,), np.float32)
    assert isinstance(env, env_wrappers.UniformBoundActionSpaceWrapper)
  else:
    assert env.action_space == gymnasium.spaces.MultiDiscrete([11] * action_dim)
    assert isinstance(env, env_wrappers.DiscretizeEnvWrapper)
    assert isinstance(env.env, env_wrappers.UniformBoundActionSpaceWrapper)
  assert isinstance(env.unwrapped, gymnasium.Env)
  rewards = _step_randomly(env, 50)
  assert len(rewards) == 50
  env.close()


@pytest.mark.timeout(60)
def test_observations_and_rewards_are_float32_from_float64_envs():
  env = mujoco_env.create_environment('HalfCheetah-v5')
  assert env.unwrapped.observation_space.dtype == np.float64  # What MuJoCo gives.
  observation, _ = env.reset(seed=0)
  assert observation.dtype == np.float32
  observation, reward, _, _, _ = env.step(np.zeros(6, np.float32))
  assert observation.dtype == np.float32 and isinstance(reward, np.float32)
  env.close()


@pytest.mark.timeout(60)
def test_actions_are_rescaled_to_the_env_bounds():
  # Humanoid-v5's actions are in [-0.4, 0.4]: the agent's [-1, 1] is mapped onto them.
  env = mujoco_env.create_environment('Humanoid-v5')
  assert env.unwrapped.action_space.high[0] == np.float32(0.4)
  assert env.action_space == gymnasium.spaces.Box(-1., 1., (17,), np.float32)
  env.close()
  env = mujoco_env.create_environment('Pendulum-v1')
  env.reset(seed=0)
  sent = []
  original_step = env.unwrapped.step
  env.unwrapped.step = lambda action: (sent.append(action), original_step(action))[1]
  env.step(np.array([0.5], np.float32))
  np.testing.assert_allclose(sent[0], [1.])  # Pendulum's torque range is [-2, 2].
  env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', ['HalfCheetah-v5', 'Pendulum-v1', 'toy_env'])
@pytest.mark.parametrize('action', [[1.5], [-1.01]])
def test_actions_outside_minus_one_one_are_refused(name, action):
  env = mujoco_env.create_environment(name)
  env.reset(seed=0)
  action = np.full(env.action_space.shape, action[0], np.float32)
  with pytest.raises(ValueError, match=r'outside \[-1, 1\]'):
    env.step(action)
  env.close()


@pytest.mark.timeout(60)
def test_discretized_actions_outside_the_grid_are_refused():
  env = mujoco_env.create_environment('Hopper-v5', 'lin', n_actions_per_dim=5)
  env.reset(seed=0)
  with pytest.raises(ValueError, match='is not in'):
    env.step(np.array([0, 5, 1]))
  env.close()


@pytest.mark.timeout(60)
def test_log_discretization_uses_n_actions_per_dim_and_action_ratio():
  env = mujoco_env.create_environment('Pendulum-v1', 'log', n_actions_per_dim=5,
                                      action_ratio=10.)
  assert env.action_space == gymnasium.spaces.MultiDiscrete([5])
  np.testing.assert_allclose(env.action_set[0], [-1, -.1, 0, .1, 1], rtol=1e-6)
  env.close()


@pytest.mark.timeout(60)
def test_gymnasium_truncates_episodes_at_max_episode_steps():
  env = mujoco_env.create_environment('Pendulum-v1', gym_kwargs={'max_episode_steps': 7})
  env.reset(seed=0)
  for step in range(1, 8):
    _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
    assert not terminated
    assert truncated == (step == 7)
  env.close()


@pytest.mark.timeout(60)
def test_gym_kwargs_reach_the_env():
  env = mujoco_env.create_environment('HalfCheetah-v5',
                                      gym_kwargs={'exclude_current_positions_from_observation':
                                                  False})
  assert env.observation_space.shape == (18,)
  env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name', ['toy_env', 'toy_memory_env'])
@pytest.mark.parametrize('discretization', ['none', 'lin', 'log'])
def test_toy_envs_run_100_random_steps(name, discretization):
  env = mujoco_env.create_environment(name, discretization)
  assert isinstance(env.unwrapped, toy_env.ToyEnv)
  assert env.observation_space == gymnasium.spaces.Box(-1., 1., (3,), np.float32)
  if discretization == 'none':
    assert env.action_space == gymnasium.spaces.Box(-1., 1., (3,), np.float32)
  else:
    assert env.action_space == gymnasium.spaces.MultiDiscrete([11] * 3)
  rewards = _step_randomly(env, 100)
  assert all(r <= 0 for r in rewards)
  env.close()


@pytest.mark.timeout(60)
def test_bit_flip_is_returned_raw_and_runs_100_random_steps():
  env = mujoco_env.create_environment('bit_flip')
  assert type(env) is toy_env.BitFlippingEnv  # pylint: disable=unidiomatic-typecheck
  assert isinstance(env, toy_env.GoalEnv)
  assert env.action_space == gymnasium.spaces.Discrete(10)
  rewards = _step_randomly(env, 100)
  assert set(rewards) <= {np.float32(-1), np.float32(0)}
  env.close()


@pytest.mark.timeout(60)
def test_create_environment_fn_reads_the_config():
  config = env_config.MujocoConfig(env_name='Hopper-v5', discretization='log',
                                   n_actions_per_dim=7, action_ratio=10., num_action_repeats=1)
  env = mujoco_env.create_environment_fn(3, config)
  assert env.action_space == gymnasium.spaces.MultiDiscrete([7] * 3)
  np.testing.assert_allclose(env.action_set[0], [-1, -10**-.5, -.1, 0, .1, 10**-.5, 1],
                             rtol=1e-5)
  env.close()
  # Only env_name is needed; the rest has the original's defaults.
  env = mujoco_env.create_environment_fn(0, env_config.MujocoConfig(env_name='toy_env'))
  assert isinstance(env.action_space, gymnasium.spaces.Box)
  env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('num_action_repeats', [0, 2, 4])
def test_create_environment_fn_refuses_action_repeats(num_action_repeats):
  with pytest.raises(ValueError, match='only num_action_repeats=1'):
    env_config.MujocoConfig(env_name='HalfCheetah-v5', num_action_repeats=num_action_repeats)


@pytest.mark.timeout(60)
def test_batched_environment_of_mujoco_envs():
  config = env_config.MujocoConfig(env_name='HalfCheetah-v5')
  batched = env_wrappers.BatchedEnvironment(
      lambda env_id, unused_flags: mujoco_env.create_environment_fn(env_id, config), 3, 6,
      types.SimpleNamespace(seed=5))
  observations = batched.reset()
  assert observations.shape == (3, 17) and observations.dtype == np.float32
  observations, rewards, dones, _ = batched.step(np.zeros((3, 6), np.float32))
  assert observations.dtype == np.float32 and rewards.dtype == np.float32
  assert not dones.any()
  batched.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('name, message', [
    ('HalfCheetah-v9', 'Did you mean HalfCheetah-v5'),
    ('halfcheetah-v5', 'Did you mean HalfCheetah-v5'),
    ('NoSuchEnv-v0', "Unknown environment 'NoSuchEnv-v0'"),
    ('toy', 'toy_env, toy_memory_env, bit_flip'),
    ('HalfCheetah-v2', 'mujoco-py environment .* use HalfCheetah-v5'),
    ('CartPole-v1', 'only Box \\(continuous\\) action spaces are supported, got Discrete\\(2\\)'),
])
def test_bad_names_are_clear_errors(name, message):
  with pytest.raises(ValueError, match=message):
    mujoco_env.create_environment(name)


@pytest.mark.timeout(60)
def test_other_bad_arguments_are_clear_errors():
  with pytest.raises(ValueError, match='Unknown discretization'):
    mujoco_env.create_environment('Pendulum-v1', 'cubic')
  with pytest.raises(ValueError, match='odd n_actions_per_dim'):
    mujoco_env.create_environment('Pendulum-v1', 'log', n_actions_per_dim=4)
  with pytest.raises(ValueError, match='bit_flip has Discrete actions'):
    mujoco_env.create_environment('bit_flip', 'lin')
  with pytest.raises(ValueError, match='gym_kwargs are for Gymnasium ids'):
    mujoco_env.create_environment('toy_env', gym_kwargs={'horizon': 5})


@pytest.mark.timeout(60)
def test_mujoco_warnings_go_to_logging_not_to_a_file(tmp_path, monkeypatch, caplog):
  """HalfCheetah's model warns when loaded; MuJoCo would write MUJOCO_LOG.TXT to the cwd."""
  monkeypatch.chdir(tmp_path)
  with caplog.at_level(logging.WARNING):
    for _ in range(2):
      mujoco_env.create_environment('HalfCheetah-v5').close()
  assert not (tmp_path / 'MUJOCO_LOG.TXT').exists()
  warnings = [r for r in caplog.records if r.getMessage().startswith('MuJoCo: ')]
  assert len(warnings) <= 1  # Once per process and message (maybe already logged earlier).
