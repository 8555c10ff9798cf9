"""Flags of the Atari environment, shared by the Atari entry points (names of the original).

Also makes 4 the default `--num_action_repeats` for Atari (the original's 1 froze the
observations and learned poorly, google-research/seed_rl#76).
"""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)
from seed_rl.environments.atari import env

flags.DEFINE_string('game', 'Pong', 'Atari game name, e.g. Pong, Breakout, MsPacman.')
flags.DEFINE_integer('max_random_noops', 30,
                     'At most this many no-op actions start every episode.')
flags.DEFINE_bool('sticky_actions', False,
                  'Repeat the previous action with probability 0.25 (Machado et al. 2018).')
flags.DEFINE_bool('full_action_space', True,
                  'Act with all 18 Atari actions (the original); false: the game\'s minimal '
                  'set (6 for Pong, 4 for Breakout).')

flags.FLAGS.set_default('num_action_repeats', env.ATARI_DEFAULT_NUM_ACTION_REPEATS)
