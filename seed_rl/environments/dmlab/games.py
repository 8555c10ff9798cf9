"""The DeepMind Lab levels of DMLab-30, their human and random scores, and the normalized score.

DMLab-30 (Espeholt et al. 2018, IMPALA) is 30 levels; two of them have separate training and
test variants (`..._train` / `..._test`), the others are trained and tested on the same level.
Scores are those of the test level (what an agent is evaluated on). No TensorFlow, no engine:
actors and analysis scripts import this freely.
"""

from collections.abc import Iterable

import numpy as np

# Training level -> the level it is evaluated on, in the order of the DMLab-30 table.
GAME_MAPPING: dict[str, str] = {
    'rooms_collect_good_objects_train': 'rooms_collect_good_objects_test',
    'rooms_exploit_deferred_effects_train': 'rooms_exploit_deferred_effects_test',
    'rooms_select_nonmatching_object': 'rooms_select_nonmatching_object',
    'rooms_watermaze': 'rooms_watermaze',
    'rooms_keys_doors_puzzle': 'rooms_keys_doors_puzzle',
    'language_select_described_object': 'language_select_described_object',
    'language_select_located_object': 'language_select_located_object',
    'language_execute_random_task': 'language_execute_random_task',
    'language_answer_quantitative_question': 'language_answer_quantitative_question',
    'lasertag_one_opponent_small': 'lasertag_one_opponent_small',
    'lasertag_three_opponents_small': 'lasertag_three_opponents_small',
    'lasertag_one_opponent_large': 'lasertag_one_opponent_large',
    'lasertag_three_opponents_large': 'lasertag_three_opponents_large',
    'natlab_fixed_large_map': 'natlab_fixed_large_map',
    'natlab_varying_map_regrowth': 'natlab_varying_map_regrowth',
    'natlab_varying_map_randomized': 'natlab_varying_map_randomized',
    'skymaze_irreversible_path_hard': 'skymaze_irreversible_path_hard',
    'skymaze_irreversible_path_varied': 'skymaze_irreversible_path_varied',
    'psychlab_arbitrary_visuomotor_mapping': 'psychlab_arbitrary_visuomotor_mapping',
    'psychlab_continuous_recognition': 'psychlab_continuous_recognition',
    'psychlab_sequential_comparison': 'psychlab_sequential_comparison',
    'psychlab_visual_search': 'psychlab_visual_search',
    'explore_object_locations_small': 'explore_object_locations_small',
    'explore_object_locations_large': 'explore_object_locations_large',
    'explore_obstructed_goals_small': 'explore_obstructed_goals_small',
    'explore_obstructed_goals_large': 'explore_obstructed_goals_large',
    'explore_goal_locations_small': 'explore_goal_locations_small',
    'explore_goal_locations_large': 'explore_goal_locations_large',
    'explore_object_rewards_few': 'explore_object_rewards_few',
    'explore_object_rewards_many': 'explore_object_rewards_many',
}

# The 30 levels an agent trains on.
DMLAB_30: list[str] = list(GAME_MAPPING)
TRAIN_GAMES = DMLAB_30
# The 30 levels it is evaluated on (same order).
TEST_GAMES: list[str] = list(GAME_MAPPING.values())

# Every name that lives under `contributed/dmlab30/` in DeepMind Lab (train and test variants).
ALL_GAMES: frozenset[str] = frozenset(TRAIN_GAMES) | frozenset(TEST_GAMES)

# Classic DeepMind Lab levels (top-level names, no prefix).
OTHERS: list[str] = [
    'lt_chasm',
    'lt_hallway_slope',
    'lt_horseshoe_color',
    'lt_space_bounce_hard',
    'nav_maze_random_goal_01',
    'nav_maze_random_goal_02',
    'nav_maze_random_goal_03',
    'nav_maze_static_01',
    'nav_maze_static_02',
    'nav_maze_static_03',
    'seekavoid_arena_01',
    'stairway_to_melon',
]

# Mean episode return of professional human testers on each test level (IMPALA paper).
HUMAN_SCORES: dict[str, float] = {
    'rooms_collect_good_objects_test': 10,
    'rooms_exploit_deferred_effects_test': 85.65,
    'rooms_select_nonmatching_object': 65.9,
    'rooms_watermaze': 54,
    'rooms_keys_doors_puzzle': 53.8,
    'language_select_described_object': 389.5,
    'language_select_located_object': 280.7,
    'language_execute_random_task': 254.05,
    'language_answer_quantitative_question': 184.5,
    'lasertag_one_opponent_small': 12.65,
    'lasertag_three_opponents_small': 18.55,
    'lasertag_one_opponent_large': 18.6,
    'lasertag_three_opponents_large': 31.5,
    'natlab_fixed_large_map': 36.9,
    'natlab_varying_map_regrowth': 24.45,
    'natlab_varying_map_randomized': 42.35,
    'skymaze_irreversible_path_hard': 100,
    'skymaze_irreversible_path_varied': 100,
    'psychlab_arbitrary_visuomotor_mapping': 58.75,
    'psychlab_continuous_recognition': 58.3,
    'psychlab_sequential_comparison': 39.5,
    'psychlab_visual_search': 78.5,
    'explore_object_locations_small': 74.45,
    'explore_object_locations_large': 65.65,
    'explore_obstructed_goals_small': 206,
    'explore_obstructed_goals_large': 119.5,
    'explore_goal_locations_small': 267.5,
    'explore_goal_locations_large': 194.5,
    'explore_object_rewards_few': 77.7,
    'explore_object_rewards_many': 106.7,
}

# Mean episode return of a uniformly random agent on each test level.
RANDOM_SCORES: dict[str, float] = {
    'rooms_collect_good_objects_test': 0.073,
    'rooms_exploit_deferred_effects_test': 8.501,
    'rooms_select_nonmatching_object': 0.312,
    'rooms_watermaze': 4.065,
    'rooms_keys_doors_puzzle': 4.135,
    'language_select_described_object': -0.07,
    'language_select_located_object': 1.929,
    'language_execute_random_task': -5.913,
    'language_answer_quantitative_question': -0.33,
    'lasertag_one_opponent_small': -0.224,
    'lasertag_three_opponents_small': -0.214,
    'lasertag_one_opponent_large': -0.083,
    'lasertag_three_opponents_large': -0.102,
    'natlab_fixed_large_map': 2.173,
    'natlab_varying_map_regrowth': 2.989,
    'natlab_varying_map_randomized': 7.346,
    'skymaze_irreversible_path_hard': 0.1,
    'skymaze_irreversible_path_varied': 14.4,
    'psychlab_arbitrary_visuomotor_mapping': 0.163,
    'psychlab_continuous_recognition': 0.224,
    'psychlab_sequential_comparison': 0.129,
    'psychlab_visual_search': 0.085,
    'explore_object_locations_small': 3.575,
    'explore_object_locations_large': 4.673,
    'explore_obstructed_goals_small': 6.76,
    'explore_obstructed_goals_large': 2.61,
    'explore_goal_locations_small': 7.66,
    'explore_goal_locations_large': 3.14,
    'explore_object_rewards_few': 2.073,
    'explore_object_rewards_many': 2.438,
}


def evaluation_level(game: str) -> str:
  """The level `game` is evaluated on (itself, or its `_test` variant for a `_train` level)."""
  return GAME_MAPPING.get(game, game)


def human_normalized_score(game: str, returns: Iterable[float]) -> float:
  """The human-normalized score of episode returns on a DMLab-30 level, in percent.

  `100 * (mean(returns) - random) / (human - random)`: 0 is a random agent, 100 a human.

  Args:
    game: a DMLab-30 level, its test name (e.g. 'rooms_collect_good_objects_test') or its
      training name (scored as its test level).
    returns: episode returns (at least one).

  Raises:
    KeyError: for a level without scores.
    ValueError: for no returns.
  """
  level = evaluation_level(game)
  if level not in HUMAN_SCORES:
    raise KeyError(f'No human/random scores for DeepMind Lab level {game!r}; scores exist for '
                   f'the DMLab-30 levels: {", ".join(sorted(HUMAN_SCORES))}.')
  returns = np.asarray(list(returns), dtype=np.float64)
  if returns.size == 0:
    raise ValueError('human_normalized_score needs at least one episode return.')
  human, random = HUMAN_SCORES[level], RANDOM_SCORES[level]
  return float((returns.mean() - random) / (human - random) * 100)
