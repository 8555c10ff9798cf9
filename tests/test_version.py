"""seed_rl.__version__ and setup.py: one version, written in seed_rl/__init__.py."""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import seed_rl

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(60)


def _setup_py_version(root: pathlib.Path) -> subprocess.CompletedProcess:
  pytest.importorskip('setuptools')
  return subprocess.run([sys.executable, 'setup.py', '--version'], cwd=root,
                        capture_output=True, text=True, timeout=30, check=False)


def test_the_package_has_a_version():
  assert re.fullmatch(r'\d+\.\d+\.\d+([ab]\d+|rc\d+)?(\.dev\d+)?', seed_rl.__version__)


def test_setup_py_packages_the_version_of_the_package():
  result = _setup_py_version(ROOT)
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip().splitlines()[-1] == seed_rl.__version__


def test_setup_py_says_where_the_version_is_missing(tmp_path):
  shutil.copy(ROOT / 'setup.py', tmp_path / 'setup.py')
  (tmp_path / 'README.md').write_text('')
  (tmp_path / 'seed_rl').mkdir()
  (tmp_path / 'seed_rl' / '__init__.py').write_text('"""No version here."""\n')
  result = _setup_py_version(tmp_path)
  assert result.returncode != 0
  assert f"{tmp_path}/seed_rl/__init__.py must set __version__ = '...'" in result.stderr
