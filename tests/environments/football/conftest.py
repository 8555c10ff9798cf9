"""Shared set-up of the Google Research Football tests.

Tests marked `gfootball` need the real engine. run_tests.sh installs it
(seed_rl/environments/football/install.sh) unless SEED_RL_SKIP_FOOTBALL=1, in which case these
tests are skipped with that reason. Without that variable a missing gfootball is an error, not
a skip, so CI cannot pass without running them.
"""

import os

import pytest

SKIP_VARIABLE = 'SEED_RL_SKIP_FOOTBALL'


def football_skipped() -> bool:
  """Whether the user asked to skip the tests that need gfootball."""
  return os.environ.get(SKIP_VARIABLE, '') not in ('', '0')


def pytest_configure(config):
  config.addinivalue_line(
      'markers', f'gfootball: needs the real gfootball engine (skipped with {SKIP_VARIABLE}=1)')


def pytest_collection_modifyitems(config, items):
  del config
  if not football_skipped():
    return
  skip = pytest.mark.skip(reason=f'{SKIP_VARIABLE} is set: gfootball tests skipped')
  for item in items:
    if 'gfootball' in item.keywords:
      item.add_marker(skip)


@pytest.fixture(autouse=True)
def _gfootball_installed(request):
  """Fails (never skips) a `gfootball` test when the engine cannot be imported."""
  if football_skipped() or request.node.get_closest_marker('gfootball') is None:
    return
  try:
    import gfootball.env  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    import gfootball_engine  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  except ImportError as e:
    pytest.fail(f'gfootball cannot be imported ({e}). Install it with '
                'seed_rl/environments/football/install.sh "$(which python)" (run_tests.sh does '
                f'this), or set {SKIP_VARIABLE}=1 to skip the football tests.', pytrace=False)
