"""The seed_rl:atari image is built here and trains inside a container.

Real engine, real images (see conftest.py for where these tests skip): the build context sent
to the engine, a rebuild that reuses every cached layer, and `./run_local.sh --docker gym
vtrace 2 8` learning CartPole-v1 with its logdir on the host until ./stop_local.sh --docker
stops it.
"""

import os
import pathlib
import re
import subprocess
import time
import uuid

import numpy as np
import pytest

from seed_rl.launch import progress_monitor
from tests.docker.conftest import ATARI_IMAGE, ROOT, docker

#: What the images may copy from the repository root (the allow-list of .dockerignore).
CONTEXT_ENTRIES = {'README.md', 'docker', 'gcp', 'run_local.sh', 'scripts', 'seed_rl',
                   'setup.py', 'stop_local.sh'}


@pytest.mark.timeout(300, func_only=True)
def test_the_build_context_holds_only_what_the_images_copy(engine):  # pylint: disable=unused-argument
  """With the classic builder too: no .venv, .git, caches or egg-info reach the engine."""
  tag = f'seed_rl_test/context:{uuid.uuid4().hex[:8]}'
  dockerfile = 'FROM seed_rl/debian:bookworm\nCOPY . /context\n'
  build = subprocess.run(['docker', 'build', '-q', '-t', tag, '-f', '-', str(ROOT)],
                         input=dockerfile, capture_output=True, text=True, timeout=240,
                         check=False, env=dict(os.environ, DOCKER_BUILDKIT='0'))
  assert build.returncode == 0, build.stderr[-3000:]
  try:
    listing = docker('run', '--rm', tag, 'find', '/context', '-mindepth', '1').stdout.split()
  finally:
    docker('rmi', '-f', tag, check=False)
  top = {path.split('/')[2] for path in listing}
  assert top == CONTEXT_ENTRIES
  unwanted = [p for p in listing if re.search(r'/(\.venv|\.git|__pycache__)(/|$)|\.pyc$|'
                                               r'\.egg-info(/|$)', p)]
  assert not unwanted, unwanted[:10]


@pytest.mark.timeout(600, func_only=True)
def test_the_atari_image_builds_and_a_rebuild_reuses_its_layers(atari_image):
  start = time.monotonic()
  result = subprocess.run([str(ROOT / 'docker' / 'build.sh'), 'gym'], capture_output=True,
                          text=True, timeout=600, check=False)
  seconds = time.monotonic() - start
  assert result.returncode == 0, result.stderr[-3000:]
  # Every step that runs something comes from the cache: nothing is installed again.
  assert 'Running in' not in result.stdout, result.stdout[-3000:]
  print(f'seed_rl:atari: first build {atari_image:.0f} s, cached rebuild {seconds:.0f} s')
  # The image holds the package and the Vertex AI entrypoint, and sees TensorFlow.
  checked = docker('run', '--rm', ATARI_IMAGE, 'python3', '-c',
                   'import tensorflow as tf, seed_rl.environments.gym.vtrace_main, os; '
                   'print(tf.__version__, os.path.exists("gcp/run.py"))')
  assert checked.stdout.split()[-2:] == ['2.21.0', 'True']


def _learner_log(logdir: pathlib.Path) -> str:
  path = logdir / 'gym_vtrace' / 'logs' / 'learner.log'
  return path.read_text(errors='replace') if path.exists() else ''


@pytest.mark.timeout(900, func_only=True)
def test_run_local_docker_learns_cartpole_and_stop_local_stops_it(atari_image, tmp_path):  # pylint: disable=unused-argument
  """./run_local.sh --docker gym vtrace 2 8: a mean return of 475 over 20 episodes within 500k
  frames (the host's own run does the same), the logdir on the host, stopped by
  ./stop_local.sh --docker with a checkpoint."""
  name = f'seed_rl_test_{uuid.uuid4().hex[:8]}'
  environment = dict(os.environ, SEED_RL_DOCKER_LOGDIR=str(tmp_path), SEED_RL_CONTAINER_NAME=name,
                     SEED_RL_NO_TENSORBOARD='1', SEED_RL_NO_TMUX='1')
  log = open(tmp_path / 'run_local.out', 'wb')
  run = subprocess.Popen(
      [str(ROOT / 'run_local.sh'), '--docker', 'gym', 'vtrace', '2', '8',
       '--env_name=CartPole-v1', '--total_environment_frames=500000'],
      cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
  try:
    while True:
      text = _learner_log(tmp_path)
      returns = progress_monitor.parse_episode_returns(text, 'training')
      if len(returns) >= 20 and np.mean(returns[-20:]) >= 475:
        break
      if run.poll() is not None:
        pytest.fail(f'no mean return of 475 over 20 episodes within 500k frames; last 20: '
                    f'{returns[-20:]}; output:\n'
                    f'{(tmp_path / "run_local.out").read_text(errors="replace")[-3000:]}\n'
                    f'learner log:\n{text[-3000:]}')
      time.sleep(2)
    # Returns are logged just before the frame count, so it bounds where they ended.
    progress = progress_monitor.PROGRESS.findall(text)
    assert progress and int(progress[-1][0]) <= 500000

    stop = subprocess.run([str(ROOT / 'stop_local.sh'), '--docker', name], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, check=False)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert run.wait(60) is not None
    assert docker('container', 'inspect', name, check=False).returncode != 0  # --rm: it is gone
    assert list((tmp_path / 'gym_vtrace').glob('ckpt-*.index')), 'no checkpoint on the host'
    assert 'Saving checkpoint' in _learner_log(tmp_path)
  finally:
    docker('rm', '-f', name, check=False)
    if run.poll() is None:
      run.kill()
      run.wait(30)
    log.close()
