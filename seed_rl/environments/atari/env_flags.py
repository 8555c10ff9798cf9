"""The flags of the Atari entry points, kept as a module of its own for the imports that name it.

`env` defines them all on import (`--game`, `--max_random_noops`, `--sticky_actions`, the
original's names, `--full_action_space`, and the common flags with a default
`--num_action_repeats` of 4: the original's 1 froze the observations and learned poorly,
google-research/seed_rl#76), so importing this module is importing `env`.
"""

from seed_rl.environments.atari import env  # noqa: F401  (defines the flags)
