"""seed_rl.common.utils keeps the original SEED RL's names, each the object of its own module."""

import pytest

from seed_rl.common import networks
from seed_rl.common import specs
from seed_rl.common import structures
from seed_rl.common import utils
from seed_rl.common.config import checks
from seed_rl.common.config import transfer
from seed_rl.common.learner_runtime import devices
from seed_rl.common.learner_runtime import env_state
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import queues
from seed_rl.common.learner_runtime import restarts
from seed_rl.common.training import replay
from seed_rl.common.training import tensors

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize('name, target', [
    ('EnvOutput', structures.EnvOutput),
    ('Settings', devices.Settings),
    ('init_learner', devices.init_learner),
    ('UnrollStore', env_state.UnrollStore),
    ('Aggregator', env_state.PerEnvState),
    ('PrioritizedReplay', replay.PrioritizedReplay),
    ('HindsightExperienceReplay', replay.HindsightExperienceReplay),
    ('ProgressLogger', progress_logger.ProgressLogger),
    ('StructuredFIFOQueue', queues.StructuredFIFOQueue),
    ('batch_apply', networks.batch_apply),
    ('make_time_major', tensors.make_time_major),
    ('split_structure', tensors.split_structure),
    ('tensor_spec_from_gym_space', specs.tensor_spec_from_gym_space),
    ('validate_learner_config', checks.validate_learner_config),
    ('serialize_config', transfer.serialize_config),
    ('PER_PROCESS_FLAGS', transfer.PER_PROCESS_FLAGS),
    ('update_config', transfer.update_config),
    ('get_non_dying_envs', restarts.get_non_dying_envs),
])
def test_original_names_are_the_objects_of_their_modules(name, target):
  assert getattr(utils, name) is target
