"""docs/learner.md's module map against `seed_rl/common/` and `seed_rl/launch/`: every module
listed, each once, and the modules marked *no TF* import no TensorFlow."""

import re
from typing import Dict, List

import pytest

from tests import processes
from tests.docs_tables import section, table_rows

pytestmark = pytest.mark.timeout(120)

PAGE = 'learner.md'
MAP_SECTION = '## Module map'
# Each table of the module map, by the package it maps.
PACKAGES = ('seed_rl/common', 'seed_rl/common/config', 'seed_rl/common/training', 'seed_rl/launch',
            'seed_rl/common/learner_runtime')


def module_tables() -> List[Dict[str, str]]:
  """The module map's tables, in the order of `PACKAGES`: {file name: job}."""
  tables, table = [], None
  for row in table_rows(section(PAGE, MAP_SECTION)):
    if row[0] == 'module':
      table = {}
      tables.append(table)
    elif not set(row[0]) <= set('-'):
      table[row[0].strip('`')] = row[1]
  return tables


def test_the_map_lists_every_module_of_the_packages():
  tables = module_tables()
  assert len(tables) == len(PACKAGES)
  for package, table in zip(PACKAGES, tables):
    files = {path.name for path in (processes.ROOT / package).glob('*.py')
             if path.name != '__init__.py'}
    assert set(table) == files, (
        f'{package}: missing {files - set(table)}, gone {set(table) - files}')


def test_the_modules_marked_no_tf_import_no_tensorflow():
  modules = [f'{package.replace("/", ".")}.{name[:-3]}'
             for package, table in zip(PACKAGES, module_tables())
             for name, job in table.items() if job.startswith('*no TF*')]
  assert modules
  result = processes.import_without_tensorflow(modules)
  assert result.returncode == 0, re.sub(r'(?s).*AssertionError: ', 'imports TensorFlow: ',
                                        result.stderr)
