"""The toy environments: ToyEnv, ToyMemoryEnv and the BitFlippingEnv GoalEnv."""

import gymnasium
import numpy as np
import pytest

from seed_rl.environments.mujoco import toy_env


@pytest.mark.timeout(30)
def test_toy_env_rewards_copying_the_observation():
  env = toy_env.ToyEnv(horizon=3, n_actions=2)
  observation, info = env.reset(seed=1)
  assert info == {} and observation.shape == (2,) and observation.dtype == np.float32
  for step in range(3):
    action = np.array([0.5, -0.5], np.float32)
    next_observation, reward, terminated, truncated, _ = env.step(action)
    np.testing.assert_allclose(reward, -np.sum(np.square(action - observation)), rtol=1e-6)
    assert terminated == (step == 2) and not truncated
    observation = next_observation
  with pytest.raises(RuntimeError, match='after the episode ended'):
    env.step(np.zeros(2, np.float32))
  env.reset()
  _, reward, _, _, _ = env.step(env._observation)  # pylint: disable=protected-access
  assert reward == 0


@pytest.mark.timeout(30)
def test_toy_env_is_reproducible_with_a_seed():
  first = [toy_env.ToyEnv().reset(seed=7)[0] for _ in range(2)]
  np.testing.assert_array_equal(*first)
  assert not np.array_equal(toy_env.ToyEnv().reset(seed=8)[0], first[0])


@pytest.mark.timeout(30)
def test_toy_memory_env_rewards_recalling_observations_horizon_steps_later():
  horizon = 4
  env = toy_env.ToyMemoryEnv(horizon=horizon, n_actions=3)
  observation, _ = env.reset(seed=0)
  shown = []
  for step in range(2 * horizon):
    if step < horizon:
      shown.append(observation)
      action = np.zeros(3, np.float32)
    else:
      np.testing.assert_array_equal(observation, np.zeros(3))  # Nothing to read off.
      action = shown[step - horizon]
    observation, reward, terminated, truncated, _ = env.step(action)
    assert reward == 0, (step, reward)  # Perfect recall (and nothing asked before horizon).
    assert terminated == (step == 2 * horizon - 1) and not truncated
  env.reset(seed=0)
  for _ in range(horizon):
    env.step(np.zeros(3, np.float32))
  _, reward, _, _, _ = env.step(np.full(3, 0.9, np.float32))
  assert reward < 0


@pytest.mark.timeout(30)
def test_bit_flip_spaces_are_goal_env_dicts():
  env = toy_env.BitFlippingEnv(n_bits=6, horizon=5)
  bits = gymnasium.spaces.Box(0., 1., (6,), np.float32)
  assert env.observation_space == gymnasium.spaces.Dict(
      {'observation': bits, 'achieved_goal': bits, 'desired_goal': bits})
  assert env.action_space == gymnasium.spaces.Discrete(6)
  observation, _ = env.reset(seed=3)
  assert env.observation_space.contains(observation)
  np.testing.assert_array_equal(observation['observation'], observation['achieved_goal'])


@pytest.mark.timeout(30)
def test_bit_flip_steps_to_the_goal():
  env = toy_env.BitFlippingEnv(n_bits=8, horizon=20)
  for seed in range(20):
    observation, _ = env.reset(seed=seed)
    if not np.array_equal(observation['achieved_goal'], observation['desired_goal']):
      break
  wrong = np.flatnonzero(observation['achieved_goal'] != observation['desired_goal'])
  for i, bit in enumerate(wrong):
    observation, reward, terminated, truncated, info = env.step(bit)
    last = i == len(wrong) - 1
    assert reward == (0 if last else -1) and terminated == last and not truncated
    assert info['is_success'] == last
    assert observation['achieved_goal'][bit] == observation['desired_goal'][bit]
  with pytest.raises(RuntimeError, match='after the episode ended'):
    env.step(0)


@pytest.mark.timeout(30)
def test_bit_flip_is_truncated_at_the_horizon():
  env = toy_env.BitFlippingEnv(n_bits=4, horizon=3)
  for seed in range(20):
    observation, _ = env.reset(seed=seed)
    if observation['achieved_goal'][0] == observation['desired_goal'][0]:
      break
  # Flipping a right bit twice and back never reaches the goal.
  results = [env.step(0) for _ in range(3)]
  assert [r[3] for r in results] == [False, False, True]
  assert not any(r[2] for r in results)


@pytest.mark.timeout(30)
def test_bit_flip_compute_reward_works_on_batches():
  env = toy_env.BitFlippingEnv(n_bits=3)
  achieved = np.array([[[0, 1, 1], [1, 1, 1]], [[0, 0, 0], [1, 0, 1]]], np.float32)  # [2, 2, 3]
  desired = np.array([[[0, 1, 1], [1, 1, 0]], [[0, 0, 0], [0, 0, 0]]], np.float32)
  rewards = env.compute_reward(achieved, desired, None)
  assert rewards.dtype == np.float32 and rewards.shape == (2, 2)
  np.testing.assert_array_equal(rewards, [[0, -1], [0, -1]])
  # One goal, and broadcasting one desired goal against a batch; info may be omitted.
  assert env.compute_reward(achieved[0, 0], desired[0, 0], {}) == 0
  np.testing.assert_array_equal(env.compute_reward(achieved[0], desired[0, 0]), [0, -1])


@pytest.mark.timeout(30)
def test_bit_flip_refuses_bad_actions():
  env = toy_env.BitFlippingEnv(n_bits=4)
  with pytest.raises(RuntimeError, match='before reset'):
    env.step(0)
  env.reset(seed=0)
  for action in (4, -1, 0.5, np.array([1, 2])):
    with pytest.raises(ValueError, match='is not in Discrete'):
      env.step(action)


@pytest.mark.timeout(30)
@pytest.mark.parametrize('make', [lambda: toy_env.ToyEnv(horizon=0),
                                  lambda: toy_env.ToyMemoryEnv(n_actions=0),
                                  lambda: toy_env.BitFlippingEnv(n_bits=0)])
def test_bad_sizes_are_refused(make):
  with pytest.raises(ValueError, match='must be >= 1'):
    make()


@pytest.mark.timeout(30)
def test_toy_env_refuses_wrong_action_shapes():
  env = toy_env.ToyEnv(n_actions=3)
  env.reset(seed=0)
  with pytest.raises(ValueError, match='shape'):
    env.step(np.zeros(2, np.float32))
