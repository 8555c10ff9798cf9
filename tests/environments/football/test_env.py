"""The Football env factory on the real gfootball engine (no TensorFlow on this side)."""

import os
import subprocess
import sys
import textwrap
import types

import gymnasium
import numpy as np
import pytest

from seed_rl.environments.football import env as football_env
from seed_rl.environments.football import observation

pytestmark = pytest.mark.gfootball

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
GAME = 'academy_empty_goal_close'
RIGHT, SHOT = 5, 12  # Indices in gfootball's default action set.


def _config(**overrides):
  values = {'game': GAME, 'reward_experiment': 'scoring', 'smm_size': 'default',
            'num_action_repeats': 1}
  values.update(overrides)
  return types.SimpleNamespace(**values)


def _planes(packed):
  """numpy inverse of the packing: `<uint8>[H, W, 16]` planes of 0/255."""
  low = (packed[..., 0] & 0xff).astype(np.uint8)
  high = (packed[..., 0] >> 8).astype(np.uint8)
  return np.unpackbits(np.stack([low, high], axis=-1), axis=-1) * 255


def _play_to_goal(env, max_steps=100):
  """Runs right, then shoots, until the episode ends; returns the step results."""
  results = []
  for t in range(max_steps):
    results.append(env.step(RIGHT if t < 8 else SHOT))
    if results[-1][2] or results[-1][3]:
      break
  return results


@pytest.mark.timeout(120)
def test_create_reset_step_close_with_stacked_smm():
  env = football_env.create_environment(0, _config())
  try:
    assert isinstance(env, observation.PackedBitsObservation)
    assert env.action_space == gymnasium.spaces.Discrete(19)
    assert env.observation_space.shape == (72, 96, 1)
    assert env.observation_space.dtype == np.uint16

    obs, info = env.reset(seed=0)
    assert obs.shape == (72, 96, 1) and obs.dtype == np.uint16
    assert env.observation_space.contains(obs)
    assert isinstance(info, dict)
    planes = _planes(obs)
    assert set(np.unique(planes)) <= {0, 255}
    # Four stacked frames of (left team, right team, ball, active player); at reset the four
    # frames are the same, and each of the 4 planes shows something.
    for plane in range(4):
      assert planes[..., plane].any()
      for frame in range(1, 4):
        np.testing.assert_array_equal(planes[..., 4 * frame + plane], planes[..., plane])

    obs, reward, terminated, truncated, info = env.step(RIGHT)
    assert obs.shape == (72, 96, 1) and obs.dtype == np.uint16
    assert isinstance(reward, float)
    assert terminated is False and truncated is False
    assert info['score_reward'] == 0
  finally:
    env.close()


@pytest.mark.timeout(120)
def test_score_reward_is_the_raw_score_also_with_checkpoint_rewards():
  """`info['score_reward']` (what the actor reports as raw reward) ignores shaping."""
  env = football_env.create_environment(0, _config(reward_experiment='scoring,checkpoints'))
  try:
    env.reset(seed=1)
    results = _play_to_goal(env)
  finally:
    env.close()
  rewards = [r[1] for r in results]
  score_rewards = [r[4]['score_reward'] for r in results]
  terminated = results[-1][2]
  assert terminated and not results[-1][3]
  assert score_rewards[-1] == 1 and sum(score_rewards) == 1
  # Running toward the goal with the ball collects checkpoint rewards (0.1 each).
  assert sum(rewards) > sum(score_rewards) + 0.05


@pytest.mark.timeout(120)
def test_same_seed_same_episode_and_medium_smm():
  def episode(seed):
    env = football_env.create_environment(0, _config(smm_size='medium'))
    try:
      observations = [env.reset(seed=seed)[0]]
      observations += [r[0] for r in _play_to_goal(env, max_steps=20)]
    finally:
      env.close()
    return np.stack(observations)

  first = episode(7)
  assert first.shape[1:] == (90, 120, 1)
  np.testing.assert_array_equal(episode(7), first)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('overrides, message', [
    ({'num_action_repeats': 4}, 'num_action_repeats must be 1'),
    ({'game': 'academy_empty_goal_clsoe'}, "Did you mean 'academy_empty_goal_close'"),
    ({'reward_experiment': 'scoring,checkpoint'}, "'scoring' or 'scoring,checkpoints'"),
    ({'smm_size': 'huge'}, 'smm_size must be one of'),
])
def test_bad_config_is_a_clear_error(overrides, message):
  with pytest.raises(ValueError, match=message):
    football_env.create_environment(0, _config(**overrides))


@pytest.mark.timeout(120)
def test_actor_side_creates_and_steps_without_tensorflow():
  code = textwrap.dedent(f"""
      import sys, types
      from seed_rl.environments.football import env
      config = types.SimpleNamespace(game={GAME!r}, reward_experiment='scoring',
                                     smm_size='default', num_action_repeats=1)
      e = env.create_environment(0, config)
      e.reset(seed=0)
      e.step(0)
      e.close()
      assert 'tensorflow' not in sys.modules, 'TensorFlow imported on the actor side'
      print('ok')
      """)
  result = subprocess.run([sys.executable, '-c', code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=100, check=False,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.strip() == 'ok'


@pytest.mark.timeout(120)
def test_seed_rl_evaluate_recreates_the_environment_of_the_football_bench():
  """`bench/learn_football.py`'s processes define football's flags in their main; its
  `define_flags` lets `seed_rl.evaluate`'s environment process define them too."""
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  from tests import evaluate_helpers  # pylint: disable=g-import-not-at-top
  run = evaluation_env.RunInfo(
      'bench.learn_football', 'seed_rl.environments.football.env:create_environment',
      learner_flags=['--game=academy_run_to_score', '--reward_experiment=scoring'])
  assert evaluate_helpers.environment_name(run) == 'academy_run_to_score'
