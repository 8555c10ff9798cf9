"""docs/deployment.md against the scripts it describes.

- The train-script table names every `gcp/train_*.sh` and nothing else.
- The variable tables name every variable that `gcp/` and `docker/run.sh` read with a default,
  and only variables those scripts read.
- The table of `gcp/run.py`'s flags names its flags with their defaults.
- The page's commands run as written: its `gcp/... --dry-run` commands end with status 0, its
  `python -m seed_rl.environments...` commands pass the entry point's flag check, and its
  TF_CONFIG example makes `gcp/run.py --dry_run` start the tasks the page says.
"""

import pathlib
import re
import shlex
import subprocess
import sys
from typing import List, Set

import pytest

from tests.docs_tables import gcp_dry_runs, run_dry_runs, shell_commands, table_rows
from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

DOC = ROOT / 'docs' / 'deployment.md'
# Variables the scripts read that the page does not document as settings: the scenario argument
# gcp/train_football.sh and gcp/train_dmlab.sh keep internally, and the system's TMPDIR.
_INTERNAL_VARIABLES = {'SCENARIO_ARG', 'TMPDIR'}


def _section(heading: str) -> str:
  """The prose and tables of the page under `heading`, up to the next heading of its level or
  above (code blocks left out: their shell comments would read as headings)."""
  text = re.sub(r'^```.*?^```$', '', DOC.read_text(), flags=re.MULTILINE | re.DOTALL)
  start = text.index(f'\n{heading}\n')
  level = heading.split(' ')[0]
  following = re.search(r'^#{1,%d} ' % len(level), text[start + len(heading) + 2:], re.MULTILINE)
  end = start + len(heading) + 2 + following.start() if following else len(text)
  return text[start:end]


def _first_column(text: str) -> List[str]:
  """The first cell of every table row of `text` below the header rows."""
  return [row[0] for row in table_rows(text)[2:]]


def _variables_in_table(text: str) -> Set[str]:
  return {name for cell in _first_column(text) for name in re.findall(r'`([A-Z][A-Z0-9_]*)`', cell)}


def _variables_with_defaults(paths: List[pathlib.Path]) -> Set[str]:
  """The variables the scripts read as ${NAME:-default}."""
  return {name for path in paths
          for name in re.findall(r'\$\{([A-Z][A-Z0-9_]*):-', path.read_text())}


def test_the_train_table_names_every_train_script():
  documented = set(re.findall(r'`(gcp/train_\w+\.sh)', _section('### Train scripts')))
  scripts = {f'gcp/{path.name}' for path in (ROOT / 'gcp').glob('train_*.sh')}
  assert documented == scripts


def test_the_gcp_variable_table_matches_the_scripts():
  scripts = sorted((ROOT / 'gcp').glob('*.sh'))
  documented = _variables_in_table(_section('### Configuration (environment variables)'))
  read = _variables_with_defaults(scripts) - _INTERNAL_VARIABLES
  assert read <= documented, f'not documented: {sorted(read - documented)}'
  text = ''.join(path.read_text() for path in scripts)
  assert all(name in text for name in documented), sorted(n for n in documented if n not in text)


def test_the_docker_run_variable_table_matches_docker_run_sh():
  script = ROOT / 'docker' / 'run.sh'
  documented = _variables_in_table(_section('### Run'))
  read = _variables_with_defaults([script])
  assert read <= documented, f'not documented: {sorted(read - documented)}'
  assert all(name in script.read_text() for name in documented)


def test_the_run_py_flag_table_has_its_flags_and_defaults():
  source = (ROOT / 'gcp' / 'run.py').read_text()
  defined = dict(re.findall(r"flags\.DEFINE_\w+\('(\w+)', ([^,]+),", source))
  rows = {}
  for line in _section('## gcp/run.py reference').splitlines():
    match = re.match(r'\| `--(\w+)` \| ([^|]+) \|', line)
    if match:
      rows[match.group(1)] = match.group(2).strip().strip('`')
  assert set(rows) == set(defined)
  for name, literal in defined.items():
    if literal != 'None':  # The page says what None means instead.
      assert rows[name] == literal.strip("'").lower(), name


def _page_commands() -> List[str]:
  return shell_commands(DOC.read_text())


def _security_flags() -> List[str]:
  """The flags of the page's SECURITY variable."""
  (assignment,) = [c for c in _page_commands() if c.startswith('SECURITY=')]
  return shlex.split(shlex.split(assignment)[0].partition('=')[2])


def test_every_gcp_dry_run_of_the_page_runs(tmp_path):
  commands = gcp_dry_runs(_page_commands())
  assert len(commands) >= 3, commands
  run_dry_runs(commands, tmp_path)


def test_the_entry_point_commands_of_the_page_pass_the_flag_check():
  commands = [c for c in _page_commands() if c.startswith('python -m seed_rl.environments.')]
  assert len(commands) == 2, commands
  for command in commands:
    words = [word for word in shlex.split(command)[2:] if word != '$SECURITY']
    result = subprocess.run(
        [sys.executable, '-m', 'seed_rl.launch.flag_check', '--prefix=docs/deployment.md'] +
        words + _security_flags(), cwd=ROOT, capture_output=True, text=True, timeout=60,
        check=False)
    assert result.returncode == 0, f'{command}: {result.stderr[-1000:]}'


def test_the_tf_config_example_starts_the_tasks_the_page_says():
  commands = _page_commands()
  setup = [c for c in commands if c.startswith(('SECURITY=', 'CLUSTER='))]
  runs = [c for c in commands if 'gcp/run.py' in c]
  assert len(runs) == 2, runs
  printed = []
  for run in runs:
    script = '\n'.join(setup + [run.replace(
        'python3 gcp/run.py', f'{shlex.quote(sys.executable)} gcp/run.py --dry_run')])
    result = subprocess.run(['bash', '-c', script], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, f'{run}: {result.stderr[-1500:]}'
    printed.append([shlex.split(line) for line in result.stdout.splitlines()])
  learner, actors = printed
  assert len(learner) == 1
  assert {'--run_mode=learner', '--server_address=[::]:8686', '--num_envs=64'} <= set(learner[0])
  assert [argv for argv in actors if '--server_address=10.0.0.1:8686' in argv] == actors
  assert [next(a for a in argv if a.startswith('--task=')) for argv in actors] == [
      f'--task={task}' for task in range(4, 8)]
  for argv in learner + actors:
    assert set(_security_flags()) <= set(argv)
