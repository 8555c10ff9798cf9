"""Flags of the Atari entry points on top of those `env` defines (`--game`, `--max_random_noops`,
`--sticky_actions`, names of the original): `--full_action_space`.

Also makes 4 the default `--num_action_repeats` for Atari (the original's 1 froze the
observations and learned poorly, google-research/seed_rl#76).
"""

from absl import flags

from seed_rl.environments.atari import env  # Defines the environment's and the common flags.

flags.DEFINE_bool('full_action_space', True,
                  'Act with all 18 Atari actions (the original); false: the game\'s minimal '
                  'set (6 for Pong, 4 for Breakout).')

flags.FLAGS.set_default('num_action_repeats', env.ATARI_DEFAULT_NUM_ACTION_REPEATS)
