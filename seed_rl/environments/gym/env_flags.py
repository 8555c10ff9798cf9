"""Flags of the Gymnasium environment, shared by the gym entry points: the fields of
`env_config.GymConfig`, whose defaults they take, so that `create_environment(task, FLAGS)` finds
every flag it reads."""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)
from seed_rl.environments.gym import action_flags
from seed_rl.environments.gym import env_config

_DEFAULTS = env_config.GymConfig()

flags.DEFINE_string('env_name', _DEFAULTS.env_name, 'Gymnasium environment id.')
action_flags.define(_DEFAULTS)
