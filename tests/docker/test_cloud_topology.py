"""The cloud job's topology in containers: one learner and two actor containers of seed_rl:atari.

Each container runs the image's Vertex AI entrypoint, `python3 gcp/run.py`, with the cluster
description in TF_CONFIG as Vertex AI sets it (workerpool0: the learner; workerpool1 index 0 and
1: the actor hosts), on a Docker network of its own, with TLS (a certificate naming the
learner's host name) and a token. Killing an actor container leaves the learner training;
stopping and starting the learner container again resumes from the checkpoint on the mounted
volume, frames continuing from there, and the remaining actor reconnects.
"""

import json
import pathlib
import re
import shutil
import subprocess
import time
import uuid
from typing import Callable, List

import pytest

from seed_rl.launch import progress_monitor
from tests.docker.conftest import ATARI_IMAGE, docker

PORT = 8686
LEARNER_HOST = 'learner'
#: Frames of one training step: --batch_size=2 unrolls of --unroll_length=10.
FRAMES_PER_STEP = 20


def _tf_config(task_type: str, index: int) -> str:
  return json.dumps({
      'cluster': {'workerpool0': [f'{LEARNER_HOST}:{PORT}'],
                  'workerpool1': [f'actor-0:{PORT}', f'actor-1:{PORT}']},
      'task': {'type': task_type, 'index': index}, 'environment': 'cloud'})


def _credentials(directory: pathlib.Path) -> None:
  """learner.pem (naming the learner's host), learner.key and token in `directory`."""
  directory.mkdir()
  subprocess.run(
      ['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
       '-nodes', '-keyout', str(directory / 'learner.key'), '-out',
       str(directory / 'learner.pem'), '-days', '2', '-subj', f'/CN={LEARNER_HOST}',
       '-addext', f'subjectAltName=DNS:{LEARNER_HOST}'],
      check=True, capture_output=True, timeout=60)
  (directory / 'token').write_text(uuid.uuid4().hex + '\n')


def _logs(container: str) -> str:
  result = docker('logs', container, check=False)
  return result.stdout + result.stderr


def _frames(text: str) -> List[int]:
  return [int(frames) for frames, _ in progress_monitor.PROGRESS.findall(text)]


def _wait_for(condition: Callable[[], bool], timeout: float, message: Callable[[], str]) -> None:
  deadline = time.monotonic() + timeout
  while not condition():
    if time.monotonic() > deadline:
      pytest.fail(message())
    time.sleep(1)


@pytest.mark.timeout(600, func_only=True)
def test_learner_and_two_actor_containers_survive_an_actor_kill_and_a_learner_restart(
    atari_image, tmp_path):  # pylint: disable=unused-argument
  if shutil.which('openssl') is None:
    pytest.skip('openssl is not installed (needed to make the test certificate)')
  tag = uuid.uuid4().hex[:8]
  network, learner = f'seed_rl_test_{tag}', f'seed_rl_test_learner_{tag}'
  actors = [f'seed_rl_test_actor{i}_{tag}' for i in (0, 1)]
  _credentials(tmp_path / 'secrets')
  (tmp_path / 'data').mkdir()
  flags = ['--env_name=CartPole-v1', '--logdir=/data/logdir', '--unroll_length=10',
           '--batch_size=2', '--total_environment_frames=100000000',
           '--grpc_tls_cert_file=/secrets/learner.pem', '--grpc_tls_key_file=/secrets/learner.key',
           '--grpc_tls_ca_file=/secrets/learner.pem', '--grpc_token_file=/secrets/token']
  run_py = ['python3', 'gcp/run.py', '--environment=gym', '--agent=vtrace',
            '--actors_per_worker=1', '--env_batch_size=2', '--stop_grace_secs=60', '--']

  def start(name: str, task_type: str, index: int, *options: str) -> None:
    docker('run', '-d', '--init', '--name', name, '--network', network, *options,
           '-e', f'TF_CONFIG={_tf_config(task_type, index)}', '-e', 'CLUSTER_SPEC=',
           '-v', f'{tmp_path / "secrets"}:/secrets:ro', ATARI_IMAGE, *run_py, *flags)

  def describe() -> str:
    return '\n'.join(f'--- {name}:\n{_logs(name)[-2500:]}' for name in [learner] + actors)

  docker('network', 'create', network)
  try:
    start(learner, 'workerpool0', 0, '--hostname', LEARNER_HOST, '--network-alias',
          LEARNER_HOST, '-v', f'{tmp_path / "data"}:/data')
    for index, actor in enumerate(actors):
      start(actor, 'workerpool1', index)
    _wait_for(lambda: len(_frames(_logs(learner))) >= 2, 240,
              lambda: 'the learner does not train:\n' + describe())
    for index, actor in enumerate(actors):
      assert f'Actor {index} connected to {LEARNER_HOST}:{PORT}' in _logs(actor), describe()
    assert f'--server_address=[::]:{PORT}' in _logs(learner)
    assert 'without a token' not in _logs(learner)

    # An actor container dies: the learner keeps training on the other one's environments.
    docker('kill', actors[1])
    killed_at = _frames(_logs(learner))[-1]
    _wait_for(lambda: _frames(_logs(learner))[-1] >= killed_at + 50 * FRAMES_PER_STEP, 180,
              lambda: f'no training after the actor was killed (at {killed_at} frames):\n'
                      + describe())

    # The learner container is stopped (SIGTERM: it checkpoints) and started again.
    docker('stop', '-t', '90', learner, timeout=150)
    assert docker('inspect', '-f', '{{.State.ExitCode}}', learner).stdout.strip() == '0', describe()
    first_run = _logs(learner)
    saved = re.findall(r'Saving checkpoint and SavedModel at iteration (\d+)', first_run)
    assert saved, describe()
    assert list((tmp_path / 'data' / 'logdir').glob(f'ckpt-{saved[-1]}.index'))
    docker('start', learner)

    def second_run() -> str:
      return _logs(learner)[len(first_run):]

    _wait_for(lambda: len(_frames(second_run())) >= 2, 240,
              lambda: 'the restarted learner does not train:\n' + second_run()[-3000:]
                      + describe())
    assert f'Restoring checkpoint /data/logdir/ckpt-{saved[-1]}' in second_run()
    resumed = _frames(second_run())
    assert resumed[0] >= int(saved[-1]) * FRAMES_PER_STEP, (saved[-1], resumed[:3])
    assert resumed[-1] > resumed[0]
    assert docker('inspect', '-f', '{{.State.Running}}', actors[0]).stdout.strip() == 'true'
    print(f'actor killed at {killed_at} frames; checkpoint at iteration {saved[-1]}; the '
          f'restarted learner went on from {resumed[0]} to {resumed[-1]} frames')
  finally:
    docker('rm', '-f', learner, *actors, check=False, timeout=120)
    docker('network', 'rm', network, check=False)
