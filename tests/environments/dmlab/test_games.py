"""Tests of the DMLab-30 level lists and the human-normalized score."""

import pytest

from seed_rl.environments.dmlab import games


@pytest.mark.timeout(10)
def test_dmlab30_lists():
  assert len(games.TRAIN_GAMES) == len(set(games.TRAIN_GAMES)) == 30
  assert len(games.TEST_GAMES) == 30
  assert len(games.ALL_GAMES) == 32  # Two levels have separate train and test variants.
  assert games.DMLAB_30 == games.TRAIN_GAMES
  assert set(games.HUMAN_SCORES) == set(games.RANDOM_SCORES) == set(games.TEST_GAMES)
  assert games.GAME_MAPPING['rooms_exploit_deferred_effects_train'] == (
      'rooms_exploit_deferred_effects_test')
  assert games.evaluation_level('rooms_watermaze') == 'rooms_watermaze'
  assert 'explore_goal_locations_small' in games.ALL_GAMES
  assert not set(games.OTHERS) & games.ALL_GAMES


@pytest.mark.timeout(10)
def test_human_normalized_score_values():
  # (mean - random) / (human - random) * 100.
  assert games.human_normalized_score('explore_goal_locations_small', [267.5]) == (
      pytest.approx(100.0))
  assert games.human_normalized_score('explore_goal_locations_small', [7.66]) == (
      pytest.approx(0.0))
  assert games.human_normalized_score('rooms_watermaze', [20.0, 40.0]) == pytest.approx(
      (30.0 - 4.065) / (54 - 4.065) * 100)
  assert games.human_normalized_score('language_execute_random_task', [0.0]) == pytest.approx(
      5.913 / (254.05 + 5.913) * 100)
  # A training level is scored on its test variant.
  assert games.human_normalized_score('rooms_collect_good_objects_train', [10.0]) == (
      pytest.approx(100.0))


@pytest.mark.timeout(10)
def test_human_normalized_score_errors():
  with pytest.raises(KeyError, match='seekavoid_arena_01'):
    games.human_normalized_score('seekavoid_arena_01', [1.0])
  with pytest.raises(ValueError, match='at least one'):
    games.human_normalized_score('rooms_watermaze', [])
