"""The football scenario names that seed_rl.environments.env_names reads from gfootball's files
are the ones gfootball itself lists (on the real gfootball)."""

import pytest

from seed_rl.environments import env_names
from seed_rl.environments.football import env as football_env

pytestmark = [pytest.mark.gfootball, pytest.mark.timeout(60)]


def test_the_scenarios_read_from_the_files_are_gfootballs_own():
  env_names.football_scenarios.cache_clear()
  assert list(env_names.football_scenarios()) == football_env.game_names()
  assert 'academy_empty_goal_close' in env_names.football_scenarios()
