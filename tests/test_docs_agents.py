"""docs/agents.md against the code it describes.

The "Bring your own agent" example must be the agent that
`tests/common/learner_runtime/test_custom_agent.py` trains, and every default in the page's flag
tables (and every `--flag=value` of its entry points table) must be the default the code
defines. Each module is imported in a process of its own, because agents' flag modules that are
imported together share flags and set each other's defaults.
"""

import ast
import json
import math
import re
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

DOC = ROOT / 'docs' / 'agents.md'
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

_PRINT_DEFAULTS = ('import importlib, json, sys\n'
                   'from absl import flags\n'
                   'importlib.import_module(sys.argv[1])\n'
                   'print(json.dumps({name: flags.FLAGS[name].default for name in flags.FLAGS},'
                   ' default=str))\n')


def section(heading: str) -> str:
  """The text of docs/agents.md from `heading` to the next `## ` heading."""
  text = DOC.read_text()
  start = text.index(f'\n{heading}\n')
  end = text.find('\n## ', start + 1)
  return text[start:end if end != -1 else len(text)]


def table_rows(text: str) -> List[List[str]]:
  """The cells of every table row of `text` (header and separator rows included)."""
  return [[cell.strip() for cell in re.split(r'(?<!\\)\|', line.strip()[1:-1])]
          for line in text.splitlines() if line.startswith('|')]


def flag_names(cell: str) -> List[str]:
  """The flags named in a table's first cell, leaving out parenthetical aliases."""
  return re.findall(r'`--(\w+)`', re.sub(r'\(.*?\)', '', cell))


def documented_values(cell: str, count: int) -> List[str]:
  """`count` values of a default cell: '4, 1' or '0 / 0 / 1', one value standing for all."""
  values = re.split(r' / |, ', re.sub(r'\s*\(.*\)$', '', cell).strip())
  if len(values) == 1:
    values *= count
  assert len(values) == count, f'{count} defaults expected in {cell!r}'
  return [value.strip('`') for value in values]


def matches(documented: str, default: Any) -> bool:
  if documented == 'none':
    return default in (None, [])
  if documented in ('true', 'false'):
    return default is (documented == 'true')
  if isinstance(default, (int, float)) and not isinstance(default, bool):
    return math.isclose(float(documented), default)
  return documented == default


def module_defaults(module: str) -> Dict[str, Any]:
  """The default of every absl flag once `module` is imported, read in a process of its own."""
  output = subprocess.run([sys.executable, '-c', _PRINT_DEFAULTS, module], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True).stdout
  return json.loads(output)


def mismatches(rows: List[List[str]], column: int, defaults: Dict[str, Any]) -> List[str]:
  found = []
  for row in rows:
    names = flag_names(row[0])
    if not names or not row[column] or row[column].startswith('not read'):
      continue
    for name, value in zip(names, documented_values(row[column], len(names))):
      if not matches(value, defaults[name]):
        found.append(f'--{name}: documented {value!r}, defined {defaults[name]!r}')
  return found


def top_level_sources(source: str) -> Dict[str, str]:
  """The source of each top-level function and class of `source`, by name."""
  return {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
          if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_the_a2c_example_is_the_agent_the_runtime_test_trains():
  [block] = re.findall(r'^```python\n(.*?)^```$', section('## Bring your own agent'),
                       re.MULTILINE | re.DOTALL)
  documented = top_level_sources(block)
  tested = top_level_sources(CUSTOM_AGENT_TEST.read_text())
  for name in ('a2c_loss', 'A2CAgent'):
    assert documented[name] == tested[name], f'{name} differs from {CUSTOM_AGENT_TEST}'
  assert 'learner_loop' in documented


@pytest.mark.parametrize('heading', list(SECTION_MODULES))
def test_documented_defaults_are_the_flags_defaults(heading):
  rows = table_rows(section(heading))
  assert rows[0][:2] == ['flag', 'default'], rows[0]
  found = mismatches(rows[2:], 1, module_defaults(SECTION_MODULES[heading]))
  assert not found, '\n'.join(found)


def test_entry_points_table_gives_each_entry_points_defaults():
  rows = table_rows(section('## Entry points'))
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
  rows = table_rows(section('## Flags every learner shares'))
  assert rows[0][1:5] == list(AGENT_MODULES), rows[0]
  for column, agent in enumerate(AGENT_MODULES, start=1):
    found = mismatches(rows[2:], column, module_defaults(AGENT_MODULES[agent]))
    assert not found, f'{agent}: ' + '\n'.join(found)
