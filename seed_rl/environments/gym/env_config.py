"""`GymConfig`: what the Gymnasium environment factory reads (the flags of `env_flags`).

No TensorFlow. `seed_rl.environments.mujoco` extends it with the MuJoCo fields.
"""

import dataclasses
from typing import ClassVar, Optional

from seed_rl.common.config import flag_config

#: Values of `discretization`: keep a Box action space, or make it MultiDiscrete with evenly
#: spaced ('lin') or logarithmically spaced ('log') values.
DISCRETIZATIONS = ('none', 'lin', 'log')


@dataclasses.dataclass(frozen=True)
class GymConfig(flag_config.FlagConfig):
  """What `seed_rl.environments.gym.env.create_environment` reads (names of the flags).

  Attributes:
    env_name: Gymnasium environment id.
    discretization: 'none', 'lin' or 'log': with 'lin' or 'log', the [-1, 1] Box action space
      becomes `MultiDiscrete([n_actions_per_dim] * d)` (the original's MuJoCo flags).
    n_actions_per_dim: actions per dimension when discretized (odd for 'log').
    action_ratio: ratio between the largest and the smallest positive action of 'log'.
    render_mode: Gymnasium's render mode, e.g. 'rgb_array' (what `seed_rl.evaluate --video`
      sets); None: no rendering.

  Raises:
    ValueError: `discretization` is not one of `DISCRETIZATIONS`, naming it.
  """
  flags_module: ClassVar[str] = 'seed_rl.environments.gym.env_flags'

  env_name: str = 'CartPole-v1'
  discretization: str = 'none'
  n_actions_per_dim: int = 11
  action_ratio: float = 30.
  render_mode: Optional[str] = None

  def __post_init__(self):
    if self.discretization not in DISCRETIZATIONS:
      raise ValueError(f'Unknown discretization {self.discretization!r}; use one of '
                       f'{", ".join(DISCRETIZATIONS)}.')
