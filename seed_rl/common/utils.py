"""The original SEED RL's `seed_rl.common.utils` names, for code written against it.

Each name lives in the module of its concern; the package itself imports from those:
`structures` (EnvOutput), `networks` (network helpers), `specs`; `config.checks` and
`config.transfer` (the configuration); `learner_runtime.devices` (init_learner),
`learner_runtime.env_state` (per-environment state and the unroll store),
`learner_runtime.progress_logger`, `learner_runtime.queues`, `learner_runtime.restarts`;
`training.replay` and `training.tensors` (nest helpers).
"""

from seed_rl.common import networks
from seed_rl.common import specs
from seed_rl.common import structures
from seed_rl.common.config import checks
from seed_rl.common.config import transfer
from seed_rl.common.learner_runtime import devices
from seed_rl.common.learner_runtime import env_state
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import queues
from seed_rl.common.learner_runtime import restarts
from seed_rl.common.training import replay
from seed_rl.common.training import tensors

EnvOutput = structures.EnvOutput
Settings = devices.Settings
init_learner = devices.init_learner
UnrollStore = env_state.UnrollStore
Aggregator = env_state.PerEnvState
PrioritizedReplay = replay.PrioritizedReplay
HindsightExperienceReplay = replay.HindsightExperienceReplay
ProgressLogger = progress_logger.ProgressLogger
StructuredFIFOQueue = queues.StructuredFIFOQueue
batch_apply = networks.batch_apply
make_time_major = tensors.make_time_major
split_structure = tensors.split_structure
tensor_spec_from_gym_space = specs.tensor_spec_from_gym_space
validate_learner_config = checks.validate_learner_config
serialize_config = transfer.serialize_config
PER_PROCESS_FLAGS = transfer.PER_PROCESS_FLAGS
update_config = transfer.update_config
get_non_dying_envs = restarts.get_non_dying_envs
