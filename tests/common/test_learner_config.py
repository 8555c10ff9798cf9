"""Tests of seed_rl.common.learner_config and config_transfer."""

import json

from absl import flags
import numpy as np
import pytest

from seed_rl.common import config_transfer
from seed_rl.common import learner_config

pytestmark = pytest.mark.timeout(120)


class _Config(object):

  def __init__(self, num_envs, env_batch_size, inference_batch_size):
    self.num_envs = num_envs
    self.env_batch_size = env_batch_size
    self.inference_batch_size = inference_batch_size


def test_validate_learner_config_resolves_auto_batch_size():
  config = _Config(num_envs=10, env_batch_size=1, inference_batch_size=-1)
  learner_config.validate_learner_config(config)
  assert config.inference_batch_size == 5
  config = _Config(num_envs=8, env_batch_size=4, inference_batch_size=-1)
  learner_config.validate_learner_config(config)
  assert config.inference_batch_size == 4
  config = _Config(num_envs=16, env_batch_size=2, inference_batch_size=-1)
  learner_config.validate_learner_config(config, num_hosts=2)
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
    learner_config.validate_learner_config(config)
  assert message in str(raised.value)


def test_every_host_needs_enough_environments_for_its_batches():
  with pytest.raises(ValueError) as raised:
    learner_config.validate_learner_config(_Config(12, 2, 8), num_hosts=2)
  assert ('--inference_batch_size=8 x 2 hosts is more than --num_envs=12: the learner runs '
          'full inference batches only and would wait forever; use --inference_batch_size=6 '
          'or less') in str(raised.value)


def _flag_values():
  fv = flags.FlagValues()
  flags.DEFINE_integer('num_envs', 4, '', flag_values=fv)
  flags.DEFINE_string('env_name', 'CartPole-v1', '', flag_values=fv)
  flags.DEFINE_float('learning_rate', 1e-3, '', flag_values=fv)
  flags.DEFINE_string('server_address', 'localhost:8686', '', flag_values=fv)
  flags.DEFINE_integer('task', 0, '', flag_values=fv)
  flags.DEFINE_enum('run_mode', None, ['learner', 'actor'], '', flag_values=fv)
  flags.DEFINE_list('levels', ['a'], '', flag_values=fv)
  return fv


class _ConfigClient(object):
  """Stands in for a grpc.Client whose server binds `get_config` (a plain callable)."""

  def __init__(self, serialized):
    self._serialized = serialized

  def get_config(self):
    return np.array(self._serialized.numpy(), dtype=object)


def test_config_transfer_sends_non_default_experiment_flags():
  learner = _flag_values()
  learner(['learner', '--num_envs=16', '--env_name=Acrobot-v1', '--levels=x,y',
           '--server_address=[::]:9000', '--run_mode=learner', '--task=3'])
  payload = json.loads(learner_config.serialize_config(learner).numpy())
  assert payload == {'num_envs': 16, 'env_name': 'Acrobot-v1', 'levels': ['x', 'y']}

  actor = _flag_values()
  actor(['actor', '--server_address=learner:9000', '--run_mode=actor', '--task=2',
         '--num_envs=3'])
  config_transfer.update_config(actor, _ConfigClient(learner_config.serialize_config(learner)))
  assert actor.num_envs == 16
  assert actor.env_name == 'Acrobot-v1'
  assert actor.levels == ['x', 'y']
  assert actor.learning_rate == 1e-3
  # Per-process flags stay the actor's own.
  assert actor.server_address == 'learner:9000'
  assert actor.task == 2 and actor.run_mode == 'actor'


def test_update_config_is_a_no_op_without_get_config_and_handles_dicts():
  config = {'a': 1}
  config_transfer.update_config(config, object())
  assert config == {'a': 1}
  config_transfer.update_config(config, _ConfigClient(learner_config.serialize_config({'a': 2, 'b': [1]})))
  assert config == {'a': 2, 'b': [1]}
  with pytest.raises(TypeError, match='JSON-serializable'):
    learner_config.serialize_config({'a': object()})
