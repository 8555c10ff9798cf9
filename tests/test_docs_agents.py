"""docs/agents.md against the code it describes.

The "Bring your own agent" example must be the agent that
`tests/common/learner_runtime/test_custom_agent.py` trains, and every default in the page's flag
tables (and every `--flag=value` of its entry points table) must be the default the code
defines.
"""

import ast
import re
from typing import Dict

import pytest

from tests.docs_tables import matches, mismatches, module_defaults, section, table_rows
from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

PAGE = 'agents.md'
CUSTOM_AGENT_TEST = ROOT / 'tests' / 'common' / 'learner_runtime' / 'test_custom_agent.py'

# The module defining each agent's flags, by the agent's column in "Flags every learner shares".
AGENT_MODULES = {
    'V-trace': 'seed_rl.agents.vtrace.learner_flags',
    'R2D2': 'seed_rl.agents.r2d2.learner_flags',
    'SAC': 'seed_rl.agents.sac.learner_flags',
    'PPO': 'seed_rl.agents.policy_gradient.main_flags',
}
# The module whose flags the table of each section documents.
SECTION_MODULES = {
    '## Flags of every process': 'seed_rl.common.common_flags',
    '## V-trace (IMPALA)': AGENT_MODULES['V-trace'],
    '## R2D2': AGENT_MODULES['R2D2'],
    '## SAC': AGENT_MODULES['SAC'],
    '## PPO: the configurable on-policy agent': AGENT_MODULES['PPO'],
}


def top_level_sources(source: str) -> Dict[str, str]:
  """The source of each top-level function and class of `source`, by name."""
  return {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
          if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_the_a2c_example_is_the_agent_the_runtime_test_trains():
  text = section(PAGE, '## Bring your own agent')
  [block] = re.findall(r'^```python\n(.*?)^```$', text, re.MULTILINE | re.DOTALL)
  documented = top_level_sources(block)
  tested = top_level_sources(CUSTOM_AGENT_TEST.read_text())
  for name in ('a2c_loss', 'A2CAgent'):
    assert documented[name] == tested[name], f'{name} differs from {CUSTOM_AGENT_TEST}'
  assert 'learner_loop' in documented


@pytest.mark.parametrize('heading', list(SECTION_MODULES))
def test_documented_defaults_are_the_flags_defaults(heading):
  rows = table_rows(section(PAGE, heading))
  assert rows[0][:2] == ['flag', 'default'], rows[0]
  found = mismatches(rows[2:], 1, module_defaults(SECTION_MODULES[heading]))
  assert not found, '\n'.join(found)


def test_entry_points_table_gives_each_entry_points_defaults():
  rows = table_rows(section(PAGE, '## Entry points'))
  assert rows[0][0] == 'entry point', rows[0]
  for row in rows[2:]:
    module = 'seed_rl.environments.' + row[0].strip('`')
    defaults = module_defaults(module)
    for span in re.findall(r'`(--[^`]*)`', ' '.join(row)):
      for flag, documented in re.findall(r'--(\w+)=(\S*)', span):
        default = defaults[flag]
        if isinstance(default, list):
          default = ','.join(default)
        assert matches(documented, default), f'{module}: --{flag}={documented}, defined {default!r}'


def test_shared_learner_flags_table_gives_each_agents_defaults():
  rows = table_rows(section(PAGE, '## Flags every learner shares'))
  assert rows[0][1:5] == list(AGENT_MODULES), rows[0]
  for column, agent in enumerate(AGENT_MODULES, start=1):
    found = mismatches(rows[2:], column, module_defaults(AGENT_MODULES[agent]))
    assert not found, f'{agent}: ' + '\n'.join(found)
