"""run_local.sh refuses bad environment names in its one-second flag check,
before anything starts (seed_rl/common/flag_check.py, seed_rl/environments/env_names.py)."""

import os
import pathlib
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run_local(tmp_path, *args):
  environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1',
                     SEED_RL_RUN_REGISTRY=str(tmp_path / 'registry'))
  start = time.monotonic()
  result = subprocess.run(['./run_local.sh', *args, f'--logdir={tmp_path / "logdir"}'],
                          cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
  return result, time.monotonic() - start


@pytest.mark.timeout(120)
def test_an_unknown_environment_id_fails_in_under_5_seconds_with_the_closest_ids(tmp_path):
  _run_local(tmp_path, 'gym', 'vtrace', '1', '--env_name=CartPol-v1')  # Warms the file cache.
  result, elapsed = _run_local(tmp_path, 'gym', 'vtrace', '1', '--env_name=CartPol-v1')
  print(f'unknown environment id refused in {elapsed:.2f} s')
  assert result.returncode == 2, result.stdout + result.stderr
  assert result.stderr.startswith('run_local.sh: unknown --env_name=CartPol-v1 (did you mean '
                                  'CartPole-v1 or ')
  assert len(result.stderr.splitlines()) == 1, result.stderr
  assert elapsed < 5, f'{elapsed:.1f} s'
  assert not (tmp_path / 'logdir').exists()  # Nothing started, nothing written.


@pytest.mark.timeout(120)
@pytest.mark.parametrize('args, message', [
    (['atari', 'vtrace', '1', '--game=Pongg'],
     'run_local.sh: unknown --game=Pongg (did you mean Pong?): not an Atari game'),
    (['mujoco', 'sac', '1', '--env_name=HalfCheetah-v2'],
     'run_local.sh: --env_name=HalfCheetah-v2 is a mujoco-py environment (mujoco-py is '
     'unmaintained and not supported): use HalfCheetah-v5'),
])
def test_bad_names_are_refused_before_anything_starts(args, message, tmp_path):
  result, _ = _run_local(tmp_path, *args)
  assert result.returncode == 2, result.stdout + result.stderr
  # The last line: a first run of an ENV may install its extra into .venv before the check.
  assert result.stderr.splitlines()[-1].startswith(message), result.stderr
  assert not (tmp_path / 'logdir').exists()
