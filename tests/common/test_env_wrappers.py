"""Tests for seed_rl.common.env_wrappers (numpy/gymnasium only, no TF)."""

import collections
import os
import subprocess
import sys
import textwrap
import types

import gymnasium
import numpy as np
import pytest

from seed_rl.common import env_wrappers

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class CountingDictEnv(gymnasium.Env):
  """Tiny env with dict observations whose contents reveal its history.

  Episodes of env `k` last `k + 2` steps. With `truncate=True` they end by
  truncation, otherwise by termination. Observations:
  `{'id': env id, 'state': {'step': steps in episode, 'resets': resets}}`.
  Every `reset` records its `seed` argument.
  """

  def __init__(self, env_id, truncate=False):
    self.env_id = env_id
    self.truncate = truncate
    self.episode_length = env_id + 2
    self.observation_space = gymnasium.spaces.Dict({
        'id': gymnasium.spaces.Box(0, 100, (), np.int32),
        'state': gymnasium.spaces.Dict({
            'step': gymnasium.spaces.Box(0, 100, (2,), np.int64),
            'resets': gymnasium.spaces.Box(0, 100, (), np.int64),
        }),
    })
    self.action_space = gymnasium.spaces.Discrete(3)
    self.seeds = []
    self.actions = []
    self.resets = 0
    self.steps = 0
    self.closed = False

  def _obs(self):
    return {'id': np.int32(self.env_id),
            'state': {'step': np.array([self.steps, -self.steps]),
                      'resets': np.int64(self.resets)}}

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.seeds.append(seed)
    self.resets += 1
    self.steps = 0
    return self._obs(), {}

  def step(self, action):
    self.actions.append(action)
    self.steps += 1
    ended = self.steps >= self.episode_length
    terminated = ended and not self.truncate
    truncated = ended and self.truncate
    return (self._obs(), float(self.env_id) + 0.5, terminated, truncated,
            {'env_id': self.env_id})

  def render(self):
    return f'render {self.env_id}'

  def close(self):
    self.closed = True


class RecordingBoxEnv(gymnasium.Env):
  """Tiny env with a Box action space that records the actions it gets."""

  def __init__(self, low, high, dtype=np.float32):
    self.action_space = gymnasium.spaces.Box(
        np.asarray(low, dtype), np.asarray(high, dtype), dtype=dtype)
    self.observation_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
    self.actions = []

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    return np.zeros(1, np.float32), {}

  def step(self, action):
    self.actions.append(np.array(action))
    return np.zeros(1, np.float32), 0.0, False, False, {}


def _make_counting(env_id, config):
  return CountingDictEnv(env_id, truncate=getattr(config, 'truncate', False))


# ----------------------------------------------------------------------------
# BatchedEnvironment


@pytest.mark.timeout(30)
def test_batched_cartpole_shapes_and_dtypes():
  batched = env_wrappers.BatchedEnvironment(
      lambda i, c: gymnasium.make('CartPole-v1'), 3, 6, config=None)
  try:
    np.testing.assert_array_equal(batched.env_ids, [6, 7, 8])
    assert batched.env_ids.dtype == np.int32
    obs = batched.reset()
    assert obs.shape == (3, 4) and obs.dtype == np.float32
    # Seeded with the env ids: same as a fresh CartPole reset with that seed.
    expected, _ = gymnasium.make('CartPole-v1').reset(seed=7)
    np.testing.assert_array_equal(obs[1], expected)

    saw_done = False
    for _ in range(200):
      obs, rewards, dones, infos = batched.step(np.array([0, 1, 0]))
      assert obs.shape == (3, 4)
      assert rewards.dtype == np.float32 and rewards.shape == (3,)
      assert dones.dtype == np.bool_ and dones.shape == (3,)
      assert len(infos) == 3 and all('truncated' in i for i in infos)
      if dones.any():
        saw_done = True
        new_obs = batched.reset_if_done(dones)
        np.testing.assert_array_equal(new_obs[~dones], obs[~dones])
        # Fresh CartPole states are within +-0.05.
        assert np.all(np.abs(new_obs[dones]) <= 0.05)
        obs = new_obs
    assert saw_done
  finally:
    batched.close()


@pytest.mark.timeout(30)
def test_batched_dict_observations_and_partial_reset():
  batched = env_wrappers.BatchedEnvironment(_make_counting, 3, 0, config=None)
  envs = batched.envs
  obs = batched.reset()
  assert set(obs) == {'id', 'state'}
  np.testing.assert_array_equal(obs['id'], [0, 1, 2])
  assert obs['id'].dtype == np.int32
  assert obs['state']['step'].shape == (3, 2)
  np.testing.assert_array_equal(obs['state']['resets'], [1, 1, 1])

  # Env 0 ends after 2 steps, env 1 after 3, env 2 after 4.
  obs, rewards, dones, infos = batched.step(np.array([0, 1, 2]))
  np.testing.assert_array_equal(dones, [False, False, False])
  np.testing.assert_allclose(rewards, [0.5, 1.5, 2.5])
  assert [e.actions[-1] for e in envs] == [0, 1, 2]
  assert [i['env_id'] for i in infos] == [0, 1, 2]
  obs, _, dones, infos = batched.step([1, 1, 1])
  np.testing.assert_array_equal(dones, [True, False, False])
  assert infos[0]['truncated'] is False  # terminated, not truncated
  np.testing.assert_array_equal(obs['state']['step'][:, 0], [2, 2, 2])

  obs = batched.reset_if_done(dones)
  np.testing.assert_array_equal(obs['state']['step'][:, 0], [0, 2, 2])
  np.testing.assert_array_equal(obs['state']['resets'], [2, 1, 1])
  assert [e.resets for e in envs] == [2, 1, 1]

  # No env done: nothing is reset and the current observations come back.
  obs = batched.reset_if_done(np.zeros(3, bool))
  np.testing.assert_array_equal(obs['state']['resets'], [2, 1, 1])
  np.testing.assert_array_equal(obs['state']['step'][:, 0], [0, 2, 2])

  assert batched.render() == 'render 0'
  batched.close()
  assert all(e.closed for e in envs)


@pytest.mark.timeout(30)
def test_batched_seeding_first_reset_only():
  batched = env_wrappers.BatchedEnvironment(_make_counting, 2, 4, config=None)
  batched.reset()
  batched.reset_if_done([True, False])
  batched.reset()
  assert batched.envs[0].seeds == [4, None, None]
  assert batched.envs[1].seeds == [5, None]

  config = types.SimpleNamespace(seed=1000)
  batched = env_wrappers.BatchedEnvironment(_make_counting, 2, 4, config)
  batched.reset()
  assert [e.seeds for e in batched.envs] == [[1004], [1005]]

  config = types.SimpleNamespace(seed=None)
  batched = env_wrappers.BatchedEnvironment(_make_counting, 1, 3, config)
  batched.reset()
  assert batched.envs[0].seeds == [3]


@pytest.mark.timeout(30)
def test_batched_truncation_flag():
  config = types.SimpleNamespace(truncate=True, seed=None)
  batched = env_wrappers.BatchedEnvironment(_make_counting, 2, 0, config)
  batched.reset()
  batched.step([0, 0])
  _, _, dones, infos = batched.step([0, 0])
  np.testing.assert_array_equal(dones, [True, False])
  assert infos[0]['truncated'] is True
  assert infos[1]['truncated'] is False


@pytest.mark.timeout(30)
def test_batched_errors():
  batched = env_wrappers.BatchedEnvironment(_make_counting, 2, 0, config=None)
  with pytest.raises(RuntimeError, match='before reset'):
    batched.reset_if_done([False, False])
  with pytest.raises(RuntimeError, match='before reset'):
    batched.step([0, 0])
  batched.reset()
  with pytest.raises(ValueError, match='Expected 2 actions'):
    batched.step([0, 0, 0])
  with pytest.raises(ValueError, match='expects 2 done flags'):
    batched.reset_if_done([True])
  with pytest.raises(ValueError, match='batch_size'):
    env_wrappers.BatchedEnvironment(_make_counting, 0, 0, config=None)


@pytest.mark.timeout(30)
def test_batched_namedtuple_and_tuple_observations():
  point = collections.namedtuple('Point', 'x y')

  class TupleEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0, 1, (1,))
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
      return (point(np.float32(1), np.zeros(2)), np.int8(3)), {}

  batched = env_wrappers.BatchedEnvironment(
      lambda i, c: TupleEnv(), 2, 0, config=None)
  p, z = batched.reset()
  assert isinstance(p, point)
  assert p.x.shape == (2,) and p.y.shape == (2, 2) and z.dtype == np.int8


# ----------------------------------------------------------------------------
# action wrappers


@pytest.mark.timeout(30)
def test_uniform_bound_action_space_wrapper():
  inner = RecordingBoxEnv([0., -1.], [2., 3.])
  env = env_wrappers.UniformBoundActionSpaceWrapper(inner)
  assert env.action_space == gymnasium.spaces.Box(-1, 1, (2,), np.float32)
  env.reset()
  env.step(np.array([-1., 1.], np.float32))
  env.step(np.array([0., 0.], np.float32))
  env.step(np.array([1.000005, -0.5], np.float32))  # tolerance, clipped
  np.testing.assert_allclose(inner.actions[0], [0., 3.])
  np.testing.assert_allclose(inner.actions[1], [1., 1.])
  np.testing.assert_allclose(inner.actions[2], [2., 0.])
  assert inner.actions[2].dtype == np.float32
  with pytest.raises(ValueError, match='outside'):
    env.step(np.array([1.1, 0.], np.float32))
  for bad in (np.nan, np.inf):
    with pytest.raises(ValueError, match='outside'):
      env.step(np.array([0., bad], np.float32))
  assert len(inner.actions) == 3  # Nothing bad reached the environment.

  with pytest.raises(TypeError, match='Box'):
    env_wrappers.UniformBoundActionSpaceWrapper(gymnasium.make('CartPole-v1'))
  with pytest.raises(ValueError, match='float32'):
    env_wrappers.UniformBoundActionSpaceWrapper(
        RecordingBoxEnv([0.], [1.], dtype=np.float64))
  with pytest.raises(ValueError, match='finite'):
    env_wrappers.UniformBoundActionSpaceWrapper(
        RecordingBoxEnv([-np.inf], [1.]))


@pytest.mark.timeout(30)
def test_uniform_bound_with_pendulum():
  env = env_wrappers.UniformBoundActionSpaceWrapper(
      gymnasium.make('Pendulum-v1'))
  env.reset(seed=0)
  obs, reward, terminated, truncated, _ = env.step(
      np.array([1.], np.float32))
  assert obs.shape == (3,) and not terminated and not truncated
  # Pendulum's cost includes 0.001 * u^2 with u = 2 (its max torque).
  reference = gymnasium.make('Pendulum-v1')
  reference.reset(seed=0)
  _, expected, _, _, _ = reference.step(np.array([2.], np.float32))
  assert reward == pytest.approx(expected)
  env.close()


@pytest.mark.timeout(30)
def test_discretize_lin():
  inner = RecordingBoxEnv([-2., -1.], [2., 1.])
  env = env_wrappers.DiscretizeEnvWrapper(inner, 5)
  assert env.action_space == gymnasium.spaces.MultiDiscrete([5, 5])
  np.testing.assert_allclose(env.action_set,
                             [[-2, -1, 0, 1, 2], [-1, -.5, 0, .5, 1]])
  env.reset()
  env.step(np.array([0, 4]))
  env.step(np.array([3, 2], np.int32))
  np.testing.assert_allclose(inner.actions[0], [-2., 1.])
  np.testing.assert_allclose(inner.actions[1], [1., 0.])
  assert inner.actions[0].dtype == np.float32
  with pytest.raises(ValueError, match='not in'):
    env.step(np.array([5, 0]))
  with pytest.raises(ValueError, match='not in'):
    env.step(np.array([0, -1]))
  with pytest.raises(ValueError, match='not in'):
    env.step(np.array([0.5, 1.0]))
  with pytest.raises(ValueError, match='not in'):
    env.step(np.array([0, 1, 2]))


@pytest.mark.timeout(30)
def test_discretize_log():
  inner = RecordingBoxEnv([-10.], [10.])
  env = env_wrappers.DiscretizeEnvWrapper(
      inner, 7, discretization='log', action_ratio=100.)
  np.testing.assert_allclose(env.action_set,
                             [[-10, -1, -.1, 0, .1, 1, 10]], rtol=1e-6)
  env.reset()
  env.step(np.array([1]))
  np.testing.assert_allclose(inner.actions[-1], [-1.], rtol=1e-6)


@pytest.mark.timeout(30)
def test_discretize_errors():
  box = lambda: RecordingBoxEnv([-1.], [1.])  # pylint: disable=unnecessary-lambda-assignment
  with pytest.raises(ValueError, match='odd'):
    env_wrappers.DiscretizeEnvWrapper(box(), 4, 'log', action_ratio=10.)
  with pytest.raises(ValueError, match='action_ratio'):
    env_wrappers.DiscretizeEnvWrapper(box(), 5, 'log')
  with pytest.raises(ValueError, match='Unknown discretization'):
    env_wrappers.DiscretizeEnvWrapper(box(), 5, 'cubic')
  with pytest.raises(ValueError, match='symmetric'):
    env_wrappers.DiscretizeEnvWrapper(RecordingBoxEnv([0.], [1.]), 5)
  with pytest.raises(TypeError, match='1-D Box'):
    env_wrappers.DiscretizeEnvWrapper(gymnasium.make('CartPole-v1'), 5)
  with pytest.raises(ValueError, match='1-D Box'):
    env_wrappers.DiscretizeEnvWrapper(RecordingBoxEnv([[-1.]], [[1.]]), 5)
  with pytest.raises(ValueError, match='n_actions_per_dim'):
    env_wrappers.DiscretizeEnvWrapper(box(), 1)


@pytest.mark.timeout(30)
def test_discretize_with_pendulum():
  env = env_wrappers.DiscretizeEnvWrapper(gymnasium.make('Pendulum-v1'), 11)
  env.reset(seed=0)
  obs, _, _, _, _ = env.step(np.array([10]))
  assert obs.shape == (3,)
  np.testing.assert_allclose(env.action_set[0, [0, 5, 10]], [-2, 0, 2])


# ----------------------------------------------------------------------------
# actor processes must not load TensorFlow


@pytest.mark.timeout(60)
def test_no_tensorflow_import():
  code = textwrap.dedent("""
      import sys
      import gymnasium
      import numpy as np
      from seed_rl.common import env_wrappers
      batched = env_wrappers.BatchedEnvironment(
          lambda i, c: gymnasium.make('CartPole-v1'), 2, 0, None)
      batched.reset()
      _, _, dones, _ = batched.step(np.zeros(2, np.int64))
      batched.reset_if_done(dones)
      batched.close()
      assert 'tensorflow' not in sys.modules, 'tensorflow was imported'
      print('OK')
  """)
  result = subprocess.run(
      [sys.executable, '-c', code], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=50, check=False)
  assert result.returncode == 0, result.stderr
  assert 'OK' in result.stdout


@pytest.mark.parametrize('space, action', [
    (gymnasium.spaces.Discrete(2), np.int64(2)),
    (gymnasium.spaces.Discrete(2), np.int64(-1)),
    (gymnasium.spaces.Discrete(2), np.float32(1.)),
    (gymnasium.spaces.MultiDiscrete([3, 3]), np.array([0, 3])),
    (gymnasium.spaces.Box(-1, 1, (2,), np.float32), np.array([0., np.nan], np.float32)),
    (gymnasium.spaces.Box(-1, 1, (2,), np.float32), np.zeros(3, np.float32)),
])
def test_invalid_actions_are_refused_naming_the_environment(space, action):
  with pytest.raises(env_wrappers.InvalidActionError, match='for environment 7, which is not'):
    env_wrappers.check_action(space, action, env_id=7)


def test_valid_actions_pass_and_the_batched_env_checks_every_step():
  env_wrappers.check_action(gymnasium.spaces.Discrete(2), np.int32(1), 0)
  env_wrappers.check_action(gymnasium.spaces.Box(-1, 1, (2,), np.float32),
                            np.array([0.5, -2.], np.float32), 0)  # Bounds: the env's business.
  batched = env_wrappers.BatchedEnvironment(lambda env_id, config: gymnasium.make('CartPole-v1'),
                                            2, 4, None)
  batched.reset()
  batched.step(np.array([0, 1]))
  with pytest.raises(env_wrappers.InvalidActionError, match='for environment 5'):
    batched.step(np.array([0, 2]))
  batched.close()
