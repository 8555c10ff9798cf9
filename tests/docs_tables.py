"""Reads the reference pages in docs/ (and README) for tests that hold them to the code they
describe.

A page's flag tables (`| flag | default | ... |` rows) are compared with the defaults the code
defines, read by importing a module in a process of its own: agents' flag modules that are
imported together share flags and set each other's defaults. A page's shell commands
(`shell_commands`) are run as written; its `gcp/... --dry-run` ones by `run_dry_runs`.
"""

import functools
import json
import math
import os
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, List, Sequence

from tests.processes import ROOT

DOCS = ROOT / 'docs'

_FENCED_SH = re.compile(r'^ *```sh\n(.*?)^ *```$', re.MULTILINE | re.DOTALL)

# Prints the flags' defaults once the module is imported; a flag whose default is None, "the
# agent's default", reads as the default of the agent config that the module imported (there
# is one for an agent's flag module or entry point).
_PRINT_DEFAULTS = """
import dataclasses, importlib, json, sys
from absl import flags
importlib.import_module(sys.argv[1])
from seed_rl.common.config import learner_config
configs = [value for name, module in list(sys.modules.items())
           if name.startswith('seed_rl.agents.') and name.endswith('.config')
           for value in vars(module).values() if isinstance(value, type)
           and issubclass(value, learner_config.LearnerConfig) and value.__module__ == name]
fields = ({field.name: field.default for field in dataclasses.fields(configs[0])}
          if len(configs) == 1 else {})
print(json.dumps({name: fields.get(name) if flags.FLAGS[name].default is None
                  else flags.FLAGS[name].default for name in flags.FLAGS}, default=str))
"""


def section(page: str, heading: str) -> str:
  """The text of `docs/<page>` from `heading` to the next `## ` heading."""
  text = (DOCS / page).read_text()
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
  """Whether a documented default ('none', 'empty', 'true', '1e9', 'Pong') is `default`."""
  if documented == default:
    return True
  if documented == 'none':
    return default in (None, [])
  if documented == 'empty':
    return default == ''
  if documented in ('true', 'false'):
    return default is (documented == 'true')
  if isinstance(default, (int, float)) and not isinstance(default, bool):
    return math.isclose(float(documented), default)
  return False  # Equal strings returned above.


@functools.lru_cache(maxsize=None)
def module_defaults(module: str) -> Dict[str, Any]:
  """The default of every absl flag once `module` is imported, read in a process of its own
  (once per test session: several pages document the same entry points)."""
  output = subprocess.run([sys.executable, '-c', _PRINT_DEFAULTS, module], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True).stdout
  return json.loads(output)


def mismatches(rows: List[List[str]], column: int, defaults: Dict[str, Any]) -> List[str]:
  """'--flag: documented ..., defined ...' for each default of `column` that the code contradicts.

  Rows that name no flag in their first cell, and empty or 'not read' cells, are left out.
  """
  found = []
  for row in rows:
    names = flag_names(row[0])
    if not names or not row[column] or row[column].startswith('not read'):
      continue
    for name, value in zip(names, documented_values(row[column], len(names))):
      if not matches(value, defaults[name]):
        found.append(f'--{name}: documented {value!r}, defined {defaults[name]!r}')
  return found


def shell_commands(text: str) -> List[str]:
  """The commands of every ```sh block of `text`, continuations joined, comments dropped."""
  commands = []
  for block in _FENCED_SH.findall(text):
    for line in re.sub(r'\\\n\s*', ' ', block).splitlines():
      line = re.sub(r'\s#\s.*$', '', line).strip()
      if line and not line.startswith('#'):
        commands.append(line)
  return commands


def gcp_dry_runs(commands: Sequence[str]) -> List[str]:
  """The `gcp/... --dry-run` commands among `commands`."""
  return [c for c in commands if c.startswith('gcp/') and '--dry-run' in c.split()]


def run_dry_runs(commands: Sequence[str], tmp_path: pathlib.Path) -> None:
  """Runs each `gcp/... --dry-run` command from the repository's root and asserts that it ends
  with status 0. The specs they write go to `tmp_path` (SPEC_DIR), and this Python's
  directory comes first on PATH, so that the scripts' `python3` is the tests' own."""
  env = dict(os.environ, SPEC_DIR=str(tmp_path),
             PATH=f'{pathlib.Path(sys.executable).parent}:{os.environ["PATH"]}')
  for command in commands:
    result = subprocess.run(shlex.split(command), cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, f'{command}: {result.stderr[-1500:]}'
