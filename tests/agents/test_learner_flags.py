"""Agents' flag modules load together in one process, and each agent's config gets its own
defaults whatever the order of the imports; `--helpfull` names every agent's default."""

import json
import subprocess
import sys

import pytest

from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

_CONFIGS = {'vtrace': 'VTraceConfig', 'r2d2': 'R2D2Config', 'sac': 'SACConfig',
            'policy_gradient': 'PolicyGradientConfig'}
# Fields whose defaults differ between the agents that have them.
_FIELDS = ('batch_size', 'unroll_length', 'unroll_queue_max_size', 'discounting',
           'log_episode_frequency', 'entropy_cost', 'entropy_cost_adjustment_speed',
           'clip_norm', 'replay_ratio', 'replay_buffer_size', 'update_target_every_n_step')

_PROGRAM = '''
import dataclasses, json, sys
from absl import flags
from seed_rl.agents.{first} import learner_flags
from seed_rl.agents.{second} import learner_flags
from seed_rl.agents.{first} import config as first
from seed_rl.agents.{second} import config as second
FLAGS = flags.FLAGS
FLAGS(['program'] + sys.argv[1:])
fields = {fields!r}
result = {{}}
for config in (first.{first_class}.from_flags(), second.{second_class}.from_flags()):
  default = type(config)()
  result[type(config).__name__] = {{
      name: [getattr(config, name), getattr(default, name)] for name in fields
      if hasattr(default, name)}}
result['help'] = {{name: FLAGS[name].help for name in ('batch_size', 'entropy_cost')
                  if name in FLAGS}}
print(json.dumps(result))
'''


def _run(first, second, *args):
  program = _PROGRAM.format(first=first, second=second, first_class=_CONFIGS[first],
                            second_class=_CONFIGS[second], fields=_FIELDS)
  result = subprocess.run([sys.executable, '-c', program, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=100)
  assert result.returncode == 0, result.stderr[-2000:]
  return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize('first, second', [('vtrace', 'r2d2'), ('vtrace', 'sac'),
                                           ('sac', 'policy_gradient'), ('r2d2', 'sac')])
def test_each_agent_gets_its_own_defaults_in_either_import_order(first, second):
  in_order, reversed_order = _run(first, second), _run(second, first)
  for name in (_CONFIGS[first], _CONFIGS[second]):
    for field, (value, default) in in_order[name].items():
      assert value == default, (name, field)
    assert reversed_order[name] == in_order[name]
  # The help does not depend on the order either, and names each agent's default.
  assert in_order['help'] == reversed_order['help']
  assert 'V-trace: 32' in _run('vtrace', 'sac')['help']['batch_size']
  assert 'SAC: 256' in _run('vtrace', 'sac')['help']['batch_size']


def test_a_given_flag_reaches_every_agent():
  result = _run('vtrace', 'r2d2', '--batch_size=7', '--discounting=0.5')
  for name in ('VTraceConfig', 'R2D2Config'):
    assert result[name]['batch_size'][0] == 7 and result[name]['discounting'][0] == 0.5


def test_an_entropy_cost_shared_with_different_defaults_names_both():
  help_text = _run('sac', 'vtrace')['help']['entropy_cost']
  assert 'SAC: 0.01' in help_text and 'V-trace: 0.00025' in help_text
