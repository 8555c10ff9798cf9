"""`DmLabConfig`: what the DeepMind Lab environment factory reads (the flags of `env_flags`).

No TensorFlow, no `deepmind_lab`.
"""

import dataclasses
from typing import ClassVar, Optional

from seed_rl.common.config import flag_config

# Frames per agent step. The original left `num_action_repeats` at the common default of 1;
# IMPALA and the SEED paper use 4 for DMLab (google-research/seed_rl#76). The DMLab entry
# points use this as their flag default.
DMLAB_DEFAULT_NUM_ACTION_REPEATS = 4


@dataclasses.dataclass(frozen=True)
class DmLabConfig(flag_config.FlagConfig):
  """What `seed_rl.environments.dmlab.env.create_environment` reads (names of the flags).

  Attributes:
    game: level name; DMLab-30 names get the contributed/dmlab30/ prefix.
    num_action_repeats: engine frames per agent step.
    width: width of the observations in pixels.
    height: height of the observations in pixels.
    level_cache_dir: level cache directory shared by the actors; None: no cache.
    homepath: DeepMind Lab runfiles directory; empty: where the installed module finds its
      assets.
    dataset_path: directory of the image dataset the psychlab_* levels need; empty: not set.
  """
  flags_module: ClassVar[str] = 'seed_rl.environments.dmlab.env_flags'

  game: str = 'explore_goal_locations_small'
  num_action_repeats: int = DMLAB_DEFAULT_NUM_ACTION_REPEATS
  width: int = 96
  height: int = 72
  level_cache_dir: Optional[str] = None
  homepath: str = ''
  dataset_path: str = ''
