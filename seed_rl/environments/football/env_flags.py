"""Flags of the Google Research Football environment (names and defaults of the original)."""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)

flags.DEFINE_string('game', '11_vs_11_easy_stochastic',
                    'GFootball scenario, e.g. 11_vs_11_easy_stochastic or '
                    'academy_empty_goal_close.')
flags.DEFINE_string('reward_experiment', 'scoring',
                    "Rewards: 'scoring' or 'scoring,checkpoints' (shaped).")
flags.DEFINE_enum('smm_size', 'default', ['default', 'medium', 'large'],
                  'Super Mini Map size: default 96x72, medium 120x90, large 144x108.')
