"""Flags of the MuJoCo environments, shared by the MuJoCo entry points (names of the original).

The entry points create their environments with `create_environment_fn(env_id, config)`, which
reads these flags from `config` (absl `FLAGS` in the entry points).
"""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)
from seed_rl.environments.mujoco import env

flags.DEFINE_string('env_name', 'HalfCheetah-v5',
                    'Gymnasium id with a Box action space (HalfCheetah-v5, Hopper-v5, '
                    'Walker2d-v5, Ant-v5, Humanoid-v5, Pendulum-v1, ...) or toy_env, '
                    'toy_memory_env, bit_flip.')
flags.DEFINE_enum('discretization', 'none', list(env.DISCRETIZATIONS),
                  'Discretization of the [-1, 1] action space into MultiDiscrete: none (keep it '
                  'continuous), lin (evenly spaced values) or log (logarithmic grid).')
flags.DEFINE_integer('n_actions_per_dim', 11,
                     'Number of actions per dimension when discretized (odd for log).')
flags.DEFINE_float('action_ratio', 30.,
                   'Ratio between the largest and the smallest positive action of the log '
                   'discretization.')

# The `(env_id, config) -> env` of the entry points (refuses num_action_repeats != 1).
create_environment_fn = env.create_environment_fn
