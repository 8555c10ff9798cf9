"""Tests of seed_rl.common.config.transfer: the learner's flags sent to the actors."""

import json

from absl import flags
import numpy as np
import pytest

from seed_rl.common.config import transfer

pytestmark = pytest.mark.timeout(120)


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
  payload = json.loads(transfer.serialize_config(learner).numpy())
  assert payload == {'num_envs': 16, 'env_name': 'Acrobot-v1', 'levels': ['x', 'y']}

  actor = _flag_values()
  actor(['actor', '--server_address=learner:9000', '--run_mode=actor', '--task=2',
         '--num_envs=3'])
  transfer.update_config(actor, _ConfigClient(transfer.serialize_config(learner)))
  assert actor.num_envs == 16
  assert actor.env_name == 'Acrobot-v1'
  assert actor.levels == ['x', 'y']
  assert actor.learning_rate == 1e-3
  # Per-process flags stay the actor's own.
  assert actor.server_address == 'learner:9000'
  assert actor.task == 2 and actor.run_mode == 'actor'


def test_update_config_is_a_no_op_without_get_config_and_handles_dicts():
  config = {'a': 1}
  transfer.update_config(config, object())
  assert config == {'a': 1}
  transfer.update_config(config, _ConfigClient(transfer.serialize_config({'a': 2, 'b': [1]})))
  assert config == {'a': 2, 'b': [1]}
  with pytest.raises(TypeError, match='JSON-serializable'):
    transfer.serialize_config({'a': object()})
