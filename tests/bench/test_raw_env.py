"""bench/raw_env.py: processes that only step an environment, their rate and the CPU they use."""

import pytest

from bench import raw_env
from seed_rl.environments.gym import env as gym_env
from seed_rl.environments.gym import env_config


@pytest.mark.timeout(120)
def test_stepping_processes_report_their_rate_and_the_cores_they_kept_busy():
  config = env_config.GymConfig(env_name='CartPole-v1')
  result = raw_env.raw_env_frames_per_sec(gym_env.create_environment, config, 1, 0.5,
                                          num_action_repeats=2)
  assert result['steps_per_sec'] > 100
  assert result['frames_per_sec'] == 2 * result['steps_per_sec']
  # Stepping does nothing but compute, in one thread: at most one core, and most of it unless
  # the machine is busy with other work.
  assert 0.1 < result['cores_busy'] < 1.2


@pytest.mark.timeout(120)
def test_a_failing_environment_is_reported():
  config = env_config.GymConfig(env_name='NoSuchEnv-v0')
  with pytest.raises(RuntimeError, match='worker 0'):
    raw_env.raw_env_frames_per_sec(gym_env.create_environment, config, 1, 0.5)
