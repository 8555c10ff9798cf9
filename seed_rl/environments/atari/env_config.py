"""`AtariConfig`: what the Atari environment factory reads (the flags `env` defines).

No TensorFlow, no ALE.
"""

import dataclasses
from typing import ClassVar

from seed_rl.common.config import flag_config

# Frames per agent step. The original defaulted `num_action_repeats` to 1, which combined with
# its frame-skip-1 bug froze the observation (issue #76); the IMPALA and SEED papers act every 4
# frames. The Atari flags make it the default of `--num_action_repeats`.
ATARI_DEFAULT_NUM_ACTION_REPEATS = 4


@dataclasses.dataclass(frozen=True)
class AtariConfig(flag_config.FlagConfig):
  """What `seed_rl.environments.atari.env.create_environment` reads (names of the flags).

  Attributes:
    game: Atari game name, e.g. Pong, Breakout, MsPacman.
    max_random_noops: at most this many no-op actions start every episode.
    sticky_actions: repeat the previous action with probability 0.25 (else 0.0).
    full_action_space: act with all 18 Atari actions (the original); false: the game's
      minimal set.
    num_action_repeats: frames per agent step (the frame skip).
  """
  flags_module: ClassVar[str] = 'seed_rl.environments.atari.env'

  game: str = 'Pong'
  max_random_noops: int = 30
  sticky_actions: bool = False
  full_action_space: bool = True
  num_action_repeats: int = ATARI_DEFAULT_NUM_ACTION_REPEATS
