"""Tests of seed_rl.common.config.checks: the learner's checks of its batch sizes and counts."""

import pytest

from seed_rl.common.config import checks

pytestmark = pytest.mark.timeout(120)


class _Config(object):

  def __init__(self, num_envs, env_batch_size, inference_batch_size):
    self.num_envs = num_envs
    self.env_batch_size = env_batch_size
    self.inference_batch_size = inference_batch_size


def test_validate_learner_config_resolves_auto_batch_size():
  config = _Config(num_envs=10, env_batch_size=1, inference_batch_size=-1)
  checks.validate_learner_config(config)
  assert config.inference_batch_size == 5
  config = _Config(num_envs=8, env_batch_size=4, inference_batch_size=-1)
  checks.validate_learner_config(config)
  assert config.inference_batch_size == 4
  config = _Config(num_envs=16, env_batch_size=2, inference_batch_size=-1)
  checks.validate_learner_config(config, num_hosts=2)
  assert config.inference_batch_size == 4


@pytest.mark.parametrize('config, message', [
    (_Config(0, 1, -1), 'num_envs'),
    (_Config(4, 0, -1), 'env_batch_size'),
    (_Config(4, 1, 0), 'inference_batch_size'),
    (_Config(8, 4, 6), '--inference_batch_size=6 must be a multiple of --env_batch_size=4'),
    (_Config(4, 1, 8), '--inference_batch_size=8 is more than --num_envs=4: the learner runs '
                       'full inference batches only and would wait forever; use '
                       '--inference_batch_size=4 or less'),
])
def test_validate_learner_config_errors(config, message):
  with pytest.raises(ValueError) as raised:
    checks.validate_learner_config(config)
  assert message in str(raised.value)


def test_every_host_needs_enough_environments_for_its_batches():
  with pytest.raises(ValueError) as raised:
    checks.validate_learner_config(_Config(12, 2, 8), num_hosts=2)
  assert ('--inference_batch_size=8 x 2 hosts is more than --num_envs=12: the learner runs '
          'full inference batches only and would wait forever; use --inference_batch_size=6 '
          'or less') in str(raised.value)
