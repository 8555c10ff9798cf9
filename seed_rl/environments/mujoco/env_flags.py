"""Flags of the MuJoCo environments, shared by the MuJoCo entry points (names of the original):
the fields of `env_config.MujocoConfig`, whose defaults they take (`--num_action_repeats` is a
common flag).

The entry points create their environments with `create_environment_fn(env_id, config)`, which
reads these flags from `config` (absl `FLAGS` in the entry points).
"""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)
from seed_rl.environments.gym import action_flags
from seed_rl.environments.mujoco import env
from seed_rl.environments.mujoco import env_config

_DEFAULTS = env_config.MujocoConfig()

flags.DEFINE_string('env_name', _DEFAULTS.env_name,
                    'Gymnasium id with a Box action space (HalfCheetah-v5, Hopper-v5, '
                    'Walker2d-v5, Ant-v5, Humanoid-v5, Pendulum-v1, ...) or toy_env, '
                    'toy_memory_env, bit_flip.')
action_flags.define(_DEFAULTS, ' The toy envs do not render.')
flags.DEFINE_string('mujoco_model', _DEFAULTS.mujoco_model,
                    'MuJoCo XML file replacing the environment\'s model (Gymnasium\'s '
                    'xml_file); every actor host needs it at this path.')

# The `(env_id, config) -> env` of the entry points (refuses num_action_repeats != 1).
create_environment_fn = env.create_environment_fn
