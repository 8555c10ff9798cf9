"""README.md is a user guide whose commands run as written.

- It stays within 400 lines, and every relative link of README.md and of the pages in docs/
  leads to a file of this repository (and, with `#anchor`, to one of that page's headings).
- Every `./run_local.sh` command of README's shell blocks passes the flag check run_local.sh makes
  before anything starts (`seed_rl.launch.flag_check`, with the flags run_local.sh adds), and so
  does every `python -m seed_rl.environments...` entry point command: a renamed flag, an
  unknown environment id or batch sizes that can never fill would fail here.
- Every `gcp/...sh --dry-run` command of README (in a block or inline) runs to its end.
- The `seed_rl.grpc` example of "Library use" runs and prints what its comment says.
(The "Bring your own environment" example is run as written by tests/test_readme_examples.py.)
"""

import pathlib
import re
import shlex
import subprocess
import sys
from typing import List

import pytest

from tests.docs_tables import gcp_dry_runs, run_dry_runs, shell_commands
from tests.processes import ROOT

README = ROOT / 'README.md'
MAX_LINES = 400
_LINK = re.compile(r'\]\(([^)\s]+)\)')


def _anchor(heading: str) -> str:
  """GitHub's anchor of a markdown heading."""
  text = re.sub(r'[^\w\- ]', '', heading.strip().lower())
  return text.replace(' ', '-')


def _pages() -> List[pathlib.Path]:
  return [README] + sorted((ROOT / 'docs').glob('*.md'))


def test_readme_is_a_guide_of_at_most_400_lines():
  lines = README.read_text().count('\n')
  assert lines <= MAX_LINES, f'README.md has {lines} lines; move reference material to docs/'


@pytest.mark.parametrize('page', _pages(), ids=lambda page: page.name)
def test_relative_links_lead_to_files_and_headings_of_this_repository(page):
  broken = []
  for target in _LINK.findall(page.read_text()):
    if re.match(r'[a-z]+:', target):  # https:, mailto:
      continue
    path, _, anchor = target.partition('#')
    linked = (page.parent / path).resolve() if path else page
    if not linked.exists():
      broken.append(f'{target} (no file {linked})')
    elif anchor and linked.suffix == '.md':
      headings = re.findall(r'^#+ (.*)$', linked.read_text(), re.MULTILINE)
      if anchor not in {_anchor(heading) for heading in headings}:
        broken.append(f'{target} (no heading with anchor #{anchor})')
  assert not broken, f'{page.name}: broken links: {broken}'


def _inline_commands(text: str) -> List[str]:
  """The `code` spans of `text` outside its fenced blocks."""
  prose = re.sub(r'^ *```.*?^ *```$', '', text, flags=re.MULTILINE | re.DOTALL)
  return re.findall(r'`([^`]+)`', prose)


def _run_local_check(command: str, tmp_path: pathlib.Path) -> List[str]:
  """The flag check run_local.sh makes for `command`: (module, flags)."""
  words = shlex.split(command)[1:]
  environment, agent, num_actors = words[:3]
  rest = words[3:]
  env_batch_size = 1
  if rest and not rest[0].startswith('-'):
    env_batch_size = int(rest.pop(0))
  return [f'seed_rl.environments.{environment}.{agent}_main', '--run_mode=learner',
          f'--logdir={tmp_path}', f'--num_envs={int(num_actors) * env_batch_size}',
          f'--env_batch_size={env_batch_size}'] + rest


def _entry_point_checks(tmp_path: pathlib.Path) -> List[List[str]]:
  checks = []
  for command in shell_commands(README.read_text()):
    if 'ENV AGENT' in command:  # The usage line.
      continue
    if command.startswith('./run_local.sh ') and ' --docker ' not in f' {command} ':
      if ' dmlab ' in f' {command} ':  # Needs DeepMind Lab's engine, checked before the flags.
        continue
      checks.append(_run_local_check(command, tmp_path))
    elif command.startswith('python -m seed_rl.environments.'):
      checks.append(shlex.split(command)[2:])
  return checks


def test_readme_has_entry_point_commands_to_check(tmp_path):
  checks = _entry_point_checks(tmp_path)
  assert len(checks) >= 5, checks
  assert any('atari' in check[0] for check in checks), checks


@pytest.mark.timeout(300)
def test_every_entry_point_command_of_readme_passes_the_flag_check(tmp_path):
  failures = []
  for check in _entry_point_checks(tmp_path):
    if 'football' in check[0]:
      pytest.importorskip('gfootball')
    result = subprocess.run(
        [sys.executable, '-m', 'seed_rl.launch.flag_check', '--prefix=README'] + check,
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
      failures.append(f'{" ".join(check)}: {result.stderr.strip()[-500:]}')
  assert not failures, '\n'.join(failures)


@pytest.mark.timeout(300)
def test_every_gcp_dry_run_of_readme_runs(tmp_path):
  text = README.read_text()
  commands = gcp_dry_runs(shell_commands(text) + _inline_commands(text))
  assert commands, 'README shows no gcp dry run'
  run_dry_runs(commands, tmp_path)


@pytest.mark.timeout(120)
def test_the_library_example_of_readme_runs_as_written(tmp_path):
  """The `seed_rl.grpc` example of "Library use": a served function answers a call."""
  section = README.read_text().split('\n## Library use\n', 1)[1].split('\n## ', 1)[0]
  (source,) = re.findall(r'^```python\n(.*?)^```$', section, re.MULTILINE | re.DOTALL)
  socket_path = '/tmp/square.sock'
  assert source.count(socket_path) == 2, source
  script = tmp_path / 'example.py'
  script.write_text(source.replace(socket_path, str(tmp_path / 'square.sock')))
  result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=100, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.strip().splitlines()[-1] == '[0. 1. 4. 9.]', result.stdout
