"""scripts/ensure_venv.sh: when pip runs. An install of some extras serves a later request for
any extras it provides (run_tests.sh installs `test`, run_local.sh then asks for the core or for
`mujoco`); a changed setup.py or package version installs again.

The venv is a directory whose bin/python answers `-V` itself, records its `-m pip ...` calls
instead of installing, and hands anything else (reading seed_rl's installed metadata) to this
Python."""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(60)

_PYTHON = """#!/usr/bin/env bash
case "$1" in
  -V) echo 'Python 3.11.0';;
  -m) echo "$*" >> "$(dirname "$0")/../pip_calls";;
  *) exec {real} "$@";;
esac
"""


@pytest.fixture
def checkout(tmp_path):
  """A copy of the checkout's setup.py, seed_rl/__init__.py (the version) and ensure_venv.sh,
  and a venv whose pip records."""
  root = tmp_path / 'checkout'
  (root / 'scripts').mkdir(parents=True)
  (root / 'seed_rl').mkdir()
  shutil.copy(ROOT / 'setup.py', root / 'setup.py')
  shutil.copy(ROOT / 'seed_rl' / '__init__.py', root / 'seed_rl' / '__init__.py')
  shutil.copy(ROOT / 'scripts' / 'ensure_venv.sh', root / 'scripts' / 'ensure_venv.sh')
  python = tmp_path / 'venv' / 'bin' / 'python'
  python.parent.mkdir(parents=True)
  python.write_text(_PYTHON.format(real=sys.executable))
  python.chmod(0o755)
  return root


def _ensure(checkout: pathlib.Path, extras: str) -> list:
  """Runs seed_rl_ensure_venv EXTRAS; returns the pip calls it made."""
  venv = checkout.parent / 'venv'
  calls = venv / 'pip_calls'
  calls.unlink(missing_ok=True)
  result = subprocess.run(
      ['bash', '-c', f'source scripts/ensure_venv.sh && seed_rl_ensure_venv "{extras}" && '
                     'echo "$SEED_RL_PYTHON"'],
      cwd=checkout, env={'PATH': '/usr/bin:/bin', 'SEED_RL_VENV': str(venv)},
      capture_output=True, text=True, timeout=30, check=False)
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == str(venv / 'bin' / 'python')
  return calls.read_text().splitlines() if calls.exists() else []


def test_the_installed_metadata_says_test_includes_mujoco():
  """What the script reads: without it, every request would install again."""
  result = subprocess.run(
      ['bash', '-c', f'source scripts/ensure_venv.sh && seed_rl_extras_provided {sys.executable}'
                     ' test'], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
  assert set(result.stdout.strip().split(',')) >= {'test', 'mujoco'}, result.stderr


@pytest.mark.parametrize('first, then, installs_again', [
    ('test', '', False),  # run_tests.sh, then run_local.sh gym/atari.
    ('test', 'mujoco', False),  # run_tests.sh, then run_local.sh mujoco.
    ('mujoco', '', False),
    ('', '', False),
    ('test', 'football', True),
    ('test', 'mujoco,football', True),
    ('mujoco', 'test', True),
    ('', 'mujoco', True),
])
def test_an_install_serves_the_extras_it_provides(checkout, first, then, installs_again):
  spec = f'.[{first}]' if first else '.'
  assert _ensure(checkout, first) == [f'-m pip install --disable-pip-version-check -q -e {spec}']
  calls = _ensure(checkout, then)
  assert bool(calls) == installs_again, calls
  # The installs add up: after both, either request installs nothing.
  assert _ensure(checkout, first) == [] and _ensure(checkout, then) == []


def test_a_changed_setup_py_installs_again(checkout):
  assert len(_ensure(checkout, 'test')) == 1
  with open(checkout / 'setup.py', 'a') as f:
    f.write('# changed\n')
  assert _ensure(checkout, '') == ['-m pip install --disable-pip-version-check -q -e .']
  assert _ensure(checkout, '') == []


def test_a_new_package_version_installs_again(checkout):
  """setup.py reads the version from seed_rl/__init__.py; the editable install's metadata keeps
  the version it was installed with until pip runs again."""
  assert len(_ensure(checkout, 'test')) == 1
  init = checkout / 'seed_rl' / '__init__.py'
  text = init.read_text()
  version = re.search(r"^__version__ = '([^']+)'$", text, re.M).group(1)
  init.write_text(text.replace(f"__version__ = '{version}'", f"__version__ = '{version}.1'"))
  assert _ensure(checkout, '') == ['-m pip install --disable-pip-version-check -q -e .']
  assert _ensure(checkout, '') == []
  # The rest of the file (its docstring) is not the version: a change there installs nothing.
  with open(init, 'a') as f:
    f.write('# changed\n')
  assert _ensure(checkout, '') == []
