"""Every data file of the package ships with it: setup.py's package_data covers each file under
seed_rl/ that is not Python, except those only a checkout's scripts use."""

import ast
import fnmatch
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Run from the checkout by run_local.sh, run_tests.sh and the Football Dockerfile, never from an
# installed package.
CHECKOUT_ONLY = {'seed_rl/environments/football/install.sh'}

pytestmark = pytest.mark.timeout(30)


def _package_data() -> dict:
  """The `package_data` argument of setup.py's `setuptools.setup` call (a literal)."""
  for node in ast.walk(ast.parse((ROOT / 'setup.py').read_text())):
    if isinstance(node, ast.keyword) and node.arg == 'package_data':
      return ast.literal_eval(node.value)
  raise AssertionError('setup.py passes no package_data')


def _shipped(path: str, package_data: dict) -> bool:
  for package, patterns in package_data.items():
    directory = package.replace('.', '/') + '/'
    if path.startswith(directory) and any(
        fnmatch.fnmatch(path[len(directory):], pattern) for pattern in patterns):
      return True
  return False


def test_every_data_file_of_the_package_ships():
  package_data = _package_data()
  data_files = sorted(
      str(path.relative_to(ROOT)) for path in (ROOT / 'seed_rl').rglob('*')
      if path.is_file() and path.suffix not in ('.py', '.pyc') and '__pycache__' not in path.parts)
  assert 'seed_rl/environments/atari/one_machine/r2d2.flags' in data_files
  missing = [path for path in data_files
             if path not in CHECKOUT_ONLY and not _shipped(path, package_data)]
  assert not missing, f'not in setup.py\'s package_data: {missing}'


def test_the_check_sees_a_file_outside_package_data():
  assert not _shipped('seed_rl/environments/atari/one_machine/x.gin', _package_data())
  assert _shipped('seed_rl/grpc/service.proto', _package_data())
