"""The original's module paths of PopArt, running statistics, minibatching and module logging
keep working after those moved to `seed_rl.common`: the same objects, gin names bound once."""

import gin
import pytest

from seed_rl.agents.policy_gradient import learner_config
from seed_rl.agents.policy_gradient.modules import logging_module as old_logging_module
from seed_rl.agents.policy_gradient.modules import popart as old_popart
from seed_rl.agents.policy_gradient.modules import ppo_training_step_utils
from seed_rl.agents.policy_gradient.modules import running_statistics as old_running_statistics
from seed_rl.common.training import logging_module
from seed_rl.common.training import minibatches
from seed_rl.common.training import popart
from seed_rl.common.training import running_statistics

MOVED = [(old_popart, popart), (old_running_statistics, running_statistics),
         (ppo_training_step_utils, minibatches), (old_logging_module, logging_module)]


@pytest.mark.parametrize('old, new', MOVED, ids=lambda module: module.__name__)
def test_the_original_path_gives_every_public_name_of_the_new_module(old, new):
  public = {name for name, value in vars(new).items()
            if not name.startswith('_') and getattr(value, '__module__', None) == new.__name__}
  assert public, f'{new.__name__} defines no public name'
  assert {name: getattr(old, name, None) for name in public} == {
      name: getattr(new, name) for name in public}


def test_gin_names_of_the_original_bind_the_moved_configurables_once():
  """Short names, the original's module-qualified names and the new full names all reach the
  same (single) registration."""
  try:
    gin.parse_config([
        'PopArt.compensate = False',
        'running_statistics.AverageMeanStd.std_min_value = 0.5',
        'seed_rl.common.training.running_statistics.EMAMeanStd.beta = 0.25',
    ])
    assert old_popart.PopArt(old_running_statistics.AverageMeanStd()).compensate is False
    assert running_statistics.AverageMeanStd()._std_min_value == 0.5
    assert old_running_statistics.EMAMeanStd()._beta == 0.25
  finally:
    gin.clear_config()


def test_the_flags_batch_modes_are_the_ones_training_knows():
  assert learner_config.BATCH_MODES == minibatches.BATCH_MODES
