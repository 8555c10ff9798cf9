"""Tests for the Gymnasium env factory, including the discretization of continuous actions."""

import types

import gymnasium
import numpy as np
import pytest

from seed_rl.common import env_wrappers
from seed_rl.environments.gym import env as gym_env
from seed_rl.environments.gym import env_config


def _config(**overrides):
  return env_config.GymConfig(**{'env_name': 'Pendulum-v1', **overrides})


@pytest.mark.timeout(30)
def test_float64_observations_become_float32_and_box_actions_are_rescaled():
  env = gym_env.create_environment(0, _config())
  assert env.observation_space.dtype == np.float32
  assert env.action_space == gymnasium.spaces.Box(-1., 1., (1,), np.float32)
  obs, _ = env.reset(seed=0)
  assert obs.dtype == np.float32
  env.close()


@pytest.mark.timeout(30)
def test_discretization_none_keeps_the_continuous_space():
  env = gym_env.create_environment(0, _config(discretization='none', n_actions_per_dim=11,
                                              action_ratio=30.))
  assert isinstance(env.action_space, gymnasium.spaces.Box)
  env.close()


@pytest.mark.timeout(30)
def test_lin_discretization_gives_multi_discrete_actions_that_step():
  env = gym_env.create_environment(0, _config(discretization='lin', n_actions_per_dim=11,
                                              action_ratio=30.))
  assert env.action_space == gymnasium.spaces.MultiDiscrete([11])
  # Discretized after the [-1, 1] rescaling: index i is Pendulum's torque 2 * (i / 5 - 1).
  assert isinstance(env, env_wrappers.DiscretizeEnvWrapper)
  assert isinstance(env.env, env_wrappers.UniformBoundActionSpaceWrapper)
  np.testing.assert_allclose(env.action_set[0], np.linspace(-1, 1, 11), atol=1e-6)
  obs, _ = env.reset(seed=0)
  assert obs.shape == (3,) and obs.dtype == np.float32
  env.action_space.seed(0)
  for _ in range(5):
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert obs.shape == (3,) and np.isfinite(reward)
    assert not terminated and not truncated
  with pytest.raises(ValueError, match='is not in'):
    env.step(np.array([11]))
  env.close()


@pytest.mark.timeout(30)
def test_log_discretization_uses_action_ratio():
  env = gym_env.create_environment(0, _config(discretization='log', n_actions_per_dim=5,
                                              action_ratio=10.))
  assert env.action_space == gymnasium.spaces.MultiDiscrete([5])
  np.testing.assert_allclose(env.action_set[0], [-1, -.1, 0, .1, 1], rtol=1e-6)
  env.reset(seed=0)
  env.step(np.array([4]))
  env.close()


@pytest.mark.timeout(30)
def test_defaults_of_n_actions_per_dim_and_action_ratio_are_the_originals():
  env = gym_env.create_environment(0, _config(discretization='log'))
  assert env.action_space == gymnasium.spaces.MultiDiscrete([11])
  np.testing.assert_allclose(env.action_set[0, 6], 1 / 30, rtol=1e-6)
  env.close()


@pytest.mark.timeout(30)
def test_discretization_errors():
  with pytest.raises(ValueError, match='Unknown discretization'):
    gym_env.create_environment(0, _config(discretization='cubic'))
  with pytest.raises(ValueError, match='needs a Box action space'):
    gym_env.create_environment(0, _config(env_name='CartPole-v1', discretization='lin'))


@pytest.mark.timeout(30)
def test_batched_environment_steps_discretized_envs():
  config = _config(discretization='lin', n_actions_per_dim=7, action_ratio=30.)
  batched = env_wrappers.BatchedEnvironment(
      lambda env_id, unused_flags: gym_env.create_environment(env_id, config), 2, 4,
      types.SimpleNamespace(seed=3))
  observations = batched.reset()
  assert observations.shape == (2, 3)
  actions = np.array([[0], [6]], np.int64)
  observations, rewards, dones, _ = batched.step(actions)
  assert observations.shape == (2, 3) and rewards.shape == (2,) and not dones.any()
  batched.close()


@pytest.mark.timeout(120)
def test_vtrace_entry_point_flags_and_action_distribution():
  from seed_rl.common import parametric_distribution  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.gym import vtrace_main  # pylint: disable=g-import-not-at-top

  flags = vtrace_main.FLAGS
  assert flags['discretization'].default == 'none'
  assert flags['discretization'].parser.enum_values == ['none', 'lin', 'log']
  assert flags['n_actions_per_dim'].default == 11
  assert flags['action_ratio'].default == 30.
  env = gym_env.create_environment(0, _config(discretization='lin', n_actions_per_dim=11,
                                              action_ratio=30.))
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(
      env.action_space)
  assert distribution.param_size == 11
  env.close()
