"""seed_rl/environments/football/install.sh: the fast no-op and a failing step's message.

The full install (apt packages, the 6-minute build) is what run_tests.sh runs before these
tests; here only its cheap paths run.
"""

import os
import pathlib
import subprocess
import sys
import time
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
INSTALL = ROOT / 'seed_rl' / 'environments' / 'football' / 'install.sh'

pytestmark = pytest.mark.gfootball


@pytest.mark.timeout(60)
def test_second_install_is_a_fast_silent_no_op():
  start = time.monotonic()
  result = subprocess.run([str(INSTALL), sys.executable], capture_output=True, text=True,
                          timeout=50, check=False)
  elapsed = time.monotonic() - start
  assert result.returncode == 0, result.stderr
  assert result.stdout == '' and result.stderr == ''
  assert elapsed < 10, f'the installed check took {elapsed:.1f} s'


@pytest.mark.timeout(60)
def test_usage_error_without_python():
  result = subprocess.run([str(INSTALL)], capture_output=True, text=True, timeout=50,
                          check=False)
  assert result.returncode == 2
  assert 'Usage:' in result.stderr


@pytest.mark.timeout(120)
def test_a_failing_step_is_named_with_the_log_tail(tmp_path):
  """A Python without pip: the install fails at its first pip step and says so."""
  venv.create(tmp_path / 'venv', with_pip=False)
  log = tmp_path / 'install.log'
  environment = dict(os.environ, SEED_RL_WHEEL_CACHE=str(tmp_path / 'wheels'),
                     SEED_RL_FOOTBALL_LOG=str(log))
  result = subprocess.run([str(INSTALL), str(tmp_path / 'venv' / 'bin' / 'python')],
                          capture_output=True, text=True, timeout=100, check=False,
                          env=environment)
  assert result.returncode == 1
  assert "FAILED at step 'pip install psutil wheel setuptools'" in result.stderr
  assert 'No module named pip' in result.stderr  # The tail of the log is shown.
  assert 'No module named pip' in log.read_text()
