"""Tests of the run record: the flags a learner ran with, and one line per learner start."""

import json

from absl import flags
import pytest

from seed_rl.common.config import learner_config
from seed_rl.common.learner_runtime import run_record

pytestmark = pytest.mark.timeout(60)


def _flag_values():
  fv = flags.FlagValues()
  flags.DEFINE_integer('num_envs', 4, '', flag_values=fv)
  flags.DEFINE_string('env_name', 'CartPole-v1', '', flag_values=fv)
  flags.DEFINE_list('mlp_sizes', ['64'], '', flag_values=fv)
  flags.DEFINE_bool('render', False, '', flag_values=fv)
  flags.DEFINE_float('target_entropy', None, '', flag_values=fv)
  return fv


def _create_environment(env_id, config):
  del env_id, config


def test_the_flags_file_round_trips_through_flagfile(tmp_path):
  learner = _flag_values()
  learner(['learner', '--num_envs=16', '--env_name=Acrobot-v1', '--mlp_sizes=32,32',
           '--render', '--target_entropy=-1.5'])
  record = run_record.write(str(tmp_path), learner, _create_environment, 'VTRACE')
  assert record['create_env_fn'].endswith(':_create_environment') and record['agent'] == 'VTRACE'

  rerun = _flag_values()
  rerun(['rerun', f'--flagfile={tmp_path / run_record.FLAGS_FILE}', '--num_envs=2'])
  assert rerun.env_name == 'Acrobot-v1' and rerun.mlp_sizes == ['32', '32'] and rerun.render
  assert rerun.target_entropy == -1.5
  assert rerun.num_envs == 2  # Flags after the flagfile override it.


def test_every_learner_start_adds_a_line(tmp_path):
  for agent in ('VTRACE', 'R2D2'):
    run_record.write(str(tmp_path / 'logdir'), object(), _create_environment, agent)
  lines = (tmp_path / 'logdir' / run_record.RUNS_FILE).read_text().splitlines()
  assert [json.loads(line)['agent'] for line in lines] == ['VTRACE', 'R2D2']
  # A config that is not absl flags has no flags file.
  assert not (tmp_path / 'logdir' / run_record.FLAGS_FILE).exists()


def test_a_logdir_that_is_a_file_is_named(tmp_path):
  path = tmp_path / 'not_a_directory'
  path.write_text('')
  with pytest.raises(ValueError, match=f'Cannot write the logdir {path}'):
    run_record.write(str(path), object(), _create_environment, 'SAC')


def test_a_typed_config_records_the_agents_value_of_an_unset_shared_flag(tmp_path):
  values = _flag_values()
  flags.DEFINE_integer('batch_size', None, '', flag_values=values)
  flags.DEFINE_integer('seed', None, '', flag_values=values)
  values(['learner', '--num_envs=16'])
  config = learner_config.LearnerConfig(batch_size=64, num_envs=16, flag_values=values)
  run_record.write(str(tmp_path), config, _create_environment, 'VTRACE')
  lines = (tmp_path / run_record.FLAGS_FILE).read_text().splitlines()
  assert '--batch_size=64' in lines and '--num_envs=16' in lines
  # A flag whose value the config leaves None too stays unwritten.
  assert not [line for line in lines if line.startswith('--seed')]
  # A config made in code, without flags, writes no flags file.
  run_record.write(str(tmp_path / 'code'), learner_config.LearnerConfig(), _create_environment,
                   'VTRACE')
  assert not (tmp_path / 'code' / run_record.FLAGS_FILE).exists()
