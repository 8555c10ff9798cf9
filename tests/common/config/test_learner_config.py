"""The typed learner configs: read from the flags (each agent's flag defaults are its config's
defaults), frozen, refused clearly where a flag is missing or the object is not a config."""

import dataclasses
import json
import subprocess
import sys

from absl import flags
import pytest

from seed_rl.agents.r2d2 import config as r2d2_config
from seed_rl.agents.vtrace import config as vtrace_config
from seed_rl.common.config import checks
from seed_rl.common.config import learner_config
from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

_AGENTS = {'vtrace': 'VTraceConfig', 'r2d2': 'R2D2Config', 'sac': 'SACConfig',
           'policy_gradient': 'PolicyGradientConfig'}

_ALONE = '''
import dataclasses, json
from absl import flags
from seed_rl.agents.{agent} import learner_flags
from seed_rl.agents.{agent} import config
flags.FLAGS(['program'])
read, default = config.{name}.from_flags(), config.{name}()
print(json.dumps([field.name for field in dataclasses.fields(read)
                  if getattr(read, field.name) != getattr(default, field.name)
                  and field.name != 'flag_values']))
'''


@pytest.mark.parametrize('agent', sorted(_AGENTS))
def test_the_flags_of_an_agent_alone_give_its_config_defaults(agent):
  result = subprocess.run(
      [sys.executable, '-c', _ALONE.format(agent=agent, name=_AGENTS[agent])], cwd=ROOT,
      capture_output=True, text=True, timeout=100)
  assert result.returncode == 0, result.stderr[-2000:]
  assert json.loads(result.stdout.splitlines()[-1]) == []


def test_a_missing_flag_is_named_with_the_module_that_defines_it():
  values = flags.FlagValues()
  flags.DEFINE_integer('num_envs', 8, 'help', flag_values=values)
  with pytest.raises(ValueError, match=r'VTraceConfig reads --\w+, which is not defined: import '
                                       r'seed_rl\.agents\.vtrace\.learner_flags'):
    vtrace_config.VTraceConfig.from_flags(values)


def test_from_flags_reads_values_and_fills_unset_ones_with_the_agent_default():
  values = flags.FlagValues()
  for field in dataclasses.fields(r2d2_config.R2D2Config):
    if field.name != 'flag_values':
      flags.DEFINE_string(field.name, None, 'help', flag_values=values)
  values(['program', '--burn_in=3'])
  config = r2d2_config.R2D2Config.from_flags(values)
  assert config.burn_in == '3'  # What the flag holds, untouched.
  assert config.batch_size == 64 and config.discounting == .997  # R2D2's defaults.
  assert config.flag_values is values and config.env_config is values
  assert r2d2_config.R2D2Config().env_config == r2d2_config.R2D2Config()


def test_configs_are_frozen_and_of_accepts_only_configs_and_flags():
  config = vtrace_config.VTraceConfig()
  with pytest.raises(dataclasses.FrozenInstanceError):
    config.batch_size = 3  # pytype: disable=attribute-error
  assert vtrace_config.VTraceConfig.of(config) is config
  with pytest.raises(TypeError, match='A VTraceConfig or absl FlagValues is needed, got a dict'):
    vtrace_config.VTraceConfig.of({'batch_size': 3})


def test_runtime_checks_resolve_the_inference_batch_size_in_a_new_config():
  config = learner_config.LearnerConfig(num_envs=8, env_batch_size=2)
  checked = checks.validate_runtime_config(config)
  assert checked.inference_batch_size == 4 and config.inference_batch_size == -1
  with pytest.raises(ValueError, match='--batch_size must be positive, got 0'):
    checks.validate_runtime_config(dataclasses.replace(config, batch_size=0))
