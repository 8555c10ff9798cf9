"""docker/build.sh, push.sh and run.sh: argument checks and the error where no engine is there.

The images themselves need a Docker engine (and the network) to build; these tests run
anywhere: no Docker engine is reachable at DOCKER_HOST=unix:///nonexistent/docker.sock, and a
PATH without docker has no docker command at all.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NO_ENGINE = {'DOCKER_HOST': 'unix:///nonexistent/docker.sock'}


def _run(script, *args, env=None, timeout=60):
  environment = dict(os.environ)
  environment.pop('IMAGE_URI', None)
  environment.update(env or {})
  return subprocess.run([f'docker/{script}'] + list(args), cwd=ROOT, env=environment,
                        capture_output=True, text=True, timeout=timeout)


def _path_without_docker(tmp_path):
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  for tool in ('bash', 'dirname', 'tail', 'timeout'):
    (bin_dir / tool).symlink_to(shutil.which(tool))
  return str(bin_dir)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script, args', [
    ('build.sh', []), ('build.sh', ['pong']), ('push.sh', []), ('push.sh', ['atari', 'x']),
    ('run.sh', ['atari', 'r2d2']), ('run.sh', ['pong', 'r2d2', '4']),
])
def test_usage_errors(script, args):
  result = _run(script, *args, env=NO_ENGINE)
  assert result.returncode == 2
  assert 'Usage:' in result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script, args', [
    ('build.sh', ['atari']), ('build.sh', ['gym']), ('run.sh', ['football', 'vtrace', '4']),
    ('push.sh', ['dmlab']), ('build.sh', ['mujoco']), ('run.sh', ['mujoco', 'sac', '2']),
])
def test_no_reachable_engine_is_a_clear_error(script, args):
  result = _run(script, *args, env=dict(NO_ENGINE, PROJECT_ID='p'))
  assert result.returncode == 1
  assert 'no Docker engine is reachable' in result.stderr
  assert 'start the Docker daemon' in result.stderr


@pytest.mark.timeout(60)
def test_no_docker_command_is_a_clear_error(tmp_path):
  result = _run('build.sh', 'dmlab', env={'PATH': _path_without_docker(tmp_path)})
  assert result.returncode == 1
  assert 'the docker command is not installed' in result.stderr


@pytest.mark.timeout(60)
def test_push_needs_a_project(tmp_path):
  result = _run('push.sh', 'atari', env={'PATH': _path_without_docker(tmp_path),
                                         'PROJECT_ID': ''})
  assert result.returncode == 1
  assert 'set PROJECT_ID or IMAGE_URI' in result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize('environment, extras', [('mujoco', 'mujoco'), ('atari', ''),
                                                  ('gym', ''), ('football', ''),
                                                  ('dmlab', '')])
def test_the_extras_each_environment_installs(environment, extras):
  """run_local.sh and the images (docker/install_seed_rl.sh) install ENV's setup.py extras."""
  command = ('source scripts/ensure_venv.sh && '
             f'printf "[%s]" "$(seed_rl_env_extras {environment})"')
  result = subprocess.run(['bash', '-c', command], cwd=ROOT, capture_output=True, text=True,
                          timeout=30, check=False)
  assert result.returncode == 0, result.stderr
  assert result.stdout == f'[{extras}]'


@pytest.mark.timeout(60)
@pytest.mark.parametrize('args', [[], ['deps'], ['package'], ['package', 'mujoco', 'extra'],
                                  ['deps', 'dir', 'mujoco', 'x'], ['other', 'x']])
def test_install_seed_rl_usage_errors(args):
  result = _run('install_seed_rl.sh', *args)
  assert result.returncode == 2
  assert 'Usage:' in result.stderr


@pytest.mark.timeout(30)
def test_the_mujoco_image_installs_the_mujoco_extra_and_checks_an_env_steps():
  dockerfile = (ROOT / 'docker' / 'Dockerfile.mujoco').read_text()
  assert 'install_seed_rl.sh deps /tmp/seed_rl_deps mujoco' in dockerfile
  assert 'install_seed_rl.sh package mujoco' in dockerfile
  assert "create_environment('HalfCheetah-v5')" in dockerfile
  # The layers before the extra are those of the other images (built once per machine).
  shared = (ROOT / 'docker' / 'Dockerfile.atari').read_text()
  start = shared.index('ARG BASE_IMAGE')
  end = shared.index('# seed_rl itself')
  assert shared[start:end].rstrip() in dockerfile
