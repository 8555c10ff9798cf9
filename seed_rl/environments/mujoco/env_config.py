"""`MujocoConfig`: what the MuJoCo environment factory reads (the flags of `env_flags`).

No TensorFlow. The Gymnasium factory's fields and two of MuJoCo's own.
"""

import dataclasses
from typing import ClassVar, Optional

from seed_rl.environments.gym import env_config as gym_env_config

#: Values of `discretization` (`GymConfig`'s).
DISCRETIZATIONS = gym_env_config.DISCRETIZATIONS


@dataclasses.dataclass(frozen=True)
class MujocoConfig(gym_env_config.GymConfig):
  """What `seed_rl.environments.mujoco.env.create_environment_fn` reads (names of the flags).

  Attributes:
    env_name: Gymnasium id with a Box action space, or one of the toy envs (`env.TOY_ENVS`).
    num_action_repeats: must be 1: as in the original, these envs support no action repeats
      (MuJoCo ids already step several physics steps per action).
    mujoco_model: a MuJoCo XML file replacing the env's model (Gymnasium's `xml_file`); None:
      the env's own.
    (The other fields are `GymConfig`'s; the toy envs do not render.)

  Raises:
    ValueError: an unknown `discretization`, or `num_action_repeats` other than 1, naming it.
  """
  flags_module: ClassVar[str] = 'seed_rl.environments.mujoco.env_flags'

  env_name: str = 'HalfCheetah-v5'
  num_action_repeats: int = 1
  mujoco_model: Optional[str] = None

  def __post_init__(self):
    super().__post_init__()
    if self.num_action_repeats != 1:
      raise ValueError(f'The MuJoCo environments support only num_action_repeats=1, got '
                       f'{self.num_action_repeats} (MuJoCo envs already repeat their physics '
                       'steps: frame_skip 5 for HalfCheetah).')
