"""The typed configs of the environment factories: each flags module defines every field (with
the config's defaults), `from_flags` reads the flags, the factories take absl `FLAGS` as the
original's `create_environment(task, FLAGS)` passes them, and bad values or objects are refused
naming them.

absl flags are global to a process and the gym and MuJoCo flags share names, so each
environment's flags are read in a process of its own.
"""

import dataclasses
import json
import subprocess
import sys
import types

from absl import flags
import pytest

from seed_rl.common.config import flag_config
from seed_rl.environments.atari import env_config as atari_config
from seed_rl.environments.dmlab import env_config as dmlab_config
from seed_rl.environments.gym import env_config as gym_config
from seed_rl.environments.mujoco import env_config as mujoco_config
from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

# Environment -> (module of its config, config class, module defining the flags, the flags
# given, the factory `module:function`).
_ENVIRONMENTS = {
    'gym': ('seed_rl.environments.gym.env_config', 'GymConfig',
            'seed_rl.environments.gym.env_flags',
            ['--env_name=Pendulum-v1', '--discretization=lin', '--n_actions_per_dim=5'],
            'seed_rl.environments.gym.env:create_environment'),
    'mujoco': ('seed_rl.environments.mujoco.env_config', 'MujocoConfig',
               'seed_rl.environments.mujoco.env_flags',
               ['--env_name=toy_env', '--discretization=log', '--action_ratio=10'],
               'seed_rl.environments.mujoco.env:create_environment_fn'),
    'atari': ('seed_rl.environments.atari.env_config', 'AtariConfig',
              'seed_rl.environments.atari.env',
              ['--game=Breakout', '--nofull_action_space', '--num_action_repeats=2'],
              'seed_rl.environments.atari.env:create_environment'),
    'dmlab': ('seed_rl.environments.dmlab.env_config', 'DmLabConfig',
              'seed_rl.environments.dmlab.env_flags',
              ['--game=lt_chasm', '--width=8', '--homepath=/lab'], None),
}

_PROGRAM = '''
import dataclasses, importlib, json, sys
from absl import flags
module, name, flags_module, argv, factory = json.loads(sys.argv[1])
importlib.import_module(flags_module)
config_class = getattr(importlib.import_module(module), name)
defaults = config_class.from_flags(flags.FLAGS)
flags.FLAGS(['program'] + argv)
config = config_class.from_flags(flags.FLAGS)
result = {'defaults_match': defaults == config_class(),
          'defined_by': sorted({flags.FLAGS.find_module_defining_flag(field.name)
                                for field in dataclasses.fields(config_class)}),
          'config': dataclasses.asdict(config)}
if factory:
  factory_module, function = factory.split(':')
  env = getattr(importlib.import_module(factory_module), function)(0, flags.FLAGS)
  result['action_space'] = str(env.action_space)
  env.close()
print(json.dumps(result))
'''


def _read_flags(environment):
  result = subprocess.run([sys.executable, '-c', _PROGRAM, json.dumps(_ENVIRONMENTS[environment])],
                          cwd=ROOT, capture_output=True, text=True, timeout=100, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


def test_gym_flags_give_the_config_and_the_factory_reads_them():
  result = _read_flags('gym')
  assert result['defaults_match']
  assert set(result['defined_by']) == {'seed_rl.environments.gym.env_flags',
                                       'seed_rl.environments.gym.action_flags'}
  assert result['config'] == {'env_name': 'Pendulum-v1', 'discretization': 'lin',
                              'n_actions_per_dim': 5, 'action_ratio': 30., 'render_mode': None}
  assert result['action_space'] == 'MultiDiscrete([5])'


def test_mujoco_flags_give_the_config_and_the_factory_reads_them():
  result = _read_flags('mujoco')
  assert result['defaults_match']
  assert set(result['defined_by']) == {'seed_rl.environments.mujoco.env_flags',
                                       'seed_rl.environments.gym.action_flags',
                                       'seed_rl.common.common_flags'}
  assert result['config'] == {'env_name': 'toy_env', 'discretization': 'log',
                              'n_actions_per_dim': 11, 'action_ratio': 10., 'render_mode': None,
                              'num_action_repeats': 1, 'mujoco_model': None}
  assert result['action_space'].startswith('MultiDiscrete(')


def test_atari_flags_give_the_config_and_the_factory_reads_them():
  result = _read_flags('atari')
  assert result['defaults_match']
  assert set(result['defined_by']) == {'seed_rl.environments.atari.env',
                                       'seed_rl.common.common_flags'}
  assert result['config'] == {'game': 'Breakout', 'max_random_noops': 30,
                              'sticky_actions': False, 'full_action_space': False,
                              'num_action_repeats': 2}
  assert result['action_space'] == 'Discrete(4)'  # Breakout's minimal action set.


def test_dmlab_flags_give_the_config():
  result = _read_flags('dmlab')
  assert result['defaults_match']
  assert set(result['defined_by']) == {'seed_rl.environments.dmlab.env_flags',
                                       'seed_rl.common.common_flags'}
  assert result['config'] == {'game': 'lt_chasm', 'num_action_repeats': 4, 'width': 8,
                              'height': 72, 'level_cache_dir': None, 'homepath': '/lab',
                              'dataset_path': ''}


@pytest.mark.parametrize('config_class, flags_module', [
    (gym_config.GymConfig, 'seed_rl.environments.gym.env_flags'),
    (mujoco_config.MujocoConfig, 'seed_rl.environments.mujoco.env_flags'),
    (atari_config.AtariConfig, 'seed_rl.environments.atari.env'),
    (dmlab_config.DmLabConfig, 'seed_rl.environments.dmlab.env_flags'),
])
def test_a_missing_flag_or_an_object_that_is_no_config_is_refused_naming_it(config_class,
                                                                             flags_module):
  values = flags.FlagValues()
  with pytest.raises(flag_config.UndefinedFlagError,
                     match=rf'{config_class.__name__} reads --\w+, which is not defined: '
                           rf'import {flags_module}') as raised:
    config_class.from_flags(values)
  assert raised.value.flag == dataclasses.fields(config_class)[0].name
  with pytest.raises(TypeError, match=f'A {config_class.__name__} or absl FlagValues is '
                                      'needed, got a SimpleNamespace'):
    config_class.of(types.SimpleNamespace())
  config = config_class()
  assert config_class.of(config) is config


def test_unknown_values_are_refused_naming_them():
  with pytest.raises(ValueError, match="Unknown discretization 'cubic'; use one of none, lin"):
    gym_config.GymConfig(discretization='cubic')
  with pytest.raises(ValueError, match="Unknown discretization 'cubic'"):
    mujoco_config.MujocoConfig(discretization='cubic')
  with pytest.raises(ValueError, match='only num_action_repeats=1, got 4'):
    mujoco_config.MujocoConfig(num_action_repeats=4)


def test_a_flag_left_unset_takes_the_config_default():
  values = flags.FlagValues()
  for field in ('game', 'num_action_repeats', 'width', 'height', 'level_cache_dir', 'homepath',
                'dataset_path'):
    flags.DEFINE_string(field, None, 'help', flag_values=values)
  values(['program', '--game=lt_chasm'])
  assert dmlab_config.DmLabConfig.from_flags(values) == dmlab_config.DmLabConfig(game='lt_chasm')
