"""A Docker engine and the seed_rl:atari image for the tests of tests/docker.

`engine` makes the engine and the local base image with docker/local_engine.sh (as root: it
installs docker.io with apt and starts dockerd where needed, and stops a dockerd it started at the
end of the session) or uses an engine that already serves. It skips, with the reason, where
none can be had (not root and no engine serving, or no apt-get to install one), or where
SEED_RL_SKIP_DOCKER=1. `atari_image` builds seed_rl:atari with docker/build.sh; the layer cache
of the engine makes that seconds once the image was built on this machine. Making the engine,
base and image takes minutes on a fresh machine: their own timeouts bound it, and the tests'
limits count only the tests' calls (func_only).
"""

import dataclasses
import os
import re
import shutil
import subprocess
import time
from typing import Iterator, Optional

import pytest

from tests import processes

ROOT = processes.ROOT
ATARI_IMAGE = 'seed_rl:atari'


@dataclasses.dataclass
class Engine:
  """A Docker engine the tests may use, and how long it took to make it."""
  started_pid: Optional[int]  # The dockerd docker/local_engine.sh started, if it did.
  seconds: float


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
  """Runs the docker command; raises with its output when it fails and `check` is set."""
  result = subprocess.run(['docker'] + list(args), capture_output=True, text=True,
                          timeout=timeout, check=False)
  if check and result.returncode != 0:
    raise AssertionError(f'docker {" ".join(args)} failed ({result.returncode}):\n'
                         f'{result.stdout[-2000:]}{result.stderr[-3000:]}')
  return result


def _engine_serves() -> bool:
  if shutil.which('docker') is None:
    return False
  return subprocess.run(['docker', 'info'], capture_output=True, timeout=60,
                        check=False).returncode == 0


def _alive(pid: int) -> bool:
  """Whether process `pid` runs (an exited one its parent has not reaped yet does not)."""
  try:
    with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
      return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
  except OSError:
    return False


@pytest.fixture(scope='session')
def engine() -> Iterator[Engine]:
  if os.environ.get('SEED_RL_SKIP_DOCKER', '') not in ('', '0'):
    pytest.skip('SEED_RL_SKIP_DOCKER is set')
  serving = _engine_serves()
  if not serving and os.geteuid() != 0:
    pytest.skip('no Docker engine serves, and starting one (docker/local_engine.sh) needs root')
  if not serving and shutil.which('dockerd') is None and shutil.which('apt-get') is None:
    pytest.skip('no Docker engine serves, there is no dockerd, and no apt-get to install one')
  start = time.monotonic()
  result = subprocess.run([str(ROOT / 'docker' / 'local_engine.sh')], capture_output=True,
                          text=True, timeout=1500, check=False)
  if result.returncode != 0:
    if serving and os.geteuid() != 0:
      pytest.skip(f'docker/local_engine.sh cannot make the base image here: '
                  f'{result.stderr.strip().splitlines()[-1]}')
    raise AssertionError(f'docker/local_engine.sh failed:\n{result.stderr[-4000:]}')
  started = re.search(r'stop it with: kill (\d+)', result.stderr)
  made = Engine(int(started.group(1)) if started else None, time.monotonic() - start)
  yield made
  if made.started_pid is not None:
    os.kill(made.started_pid, 15)
    deadline = time.monotonic() + 30
    while _alive(made.started_pid) and time.monotonic() < deadline:
      time.sleep(0.2)


@pytest.fixture(scope='session')
def atari_image(engine) -> float:  # pylint: disable=unused-argument
  """Builds seed_rl:atari (layers cached between runs); the seconds it took."""
  start = time.monotonic()
  result = subprocess.run([str(ROOT / 'docker' / 'build.sh'), 'atari'], capture_output=True,
                          text=True, timeout=1800, check=False,
                          env=dict(os.environ, SEED_RL_IMAGE=ATARI_IMAGE))
  assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
  return time.monotonic() - start
