"""Learner and actors on separate hosts: two network namespaces joined by a veth pair.

The learner's host (namespace A, 10.200.0.1) and the actors' host (namespace B, 10.200.0.2)
each run `gcp/run.py` with the TF_CONFIG that Vertex AI would give them (workerpool0 and
workerpool1 index 0). Their only connection is the veth pair, and the gRPC traffic on it uses TLS
(a self-signed certificate for 10.200.0.1) and a shared token. No traffic leaves the namespaces
the test creates. Needs root (or CAP_SYS_ADMIN + CAP_NET_ADMIN), `ip` and `openssl`; skips with
the reason where they are missing or namespaces are not permitted.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from typing import Dict, Iterator, List, Sequence

import pytest

from tests import processes

RUN_PY = str(processes.ROOT / 'gcp' / 'run.py')
LEARNER_IP, ACTORS_IP = '10.200.0.1', '10.200.0.2'
PORT = 8686  # Free by construction: nothing else lives in these namespaces.


def _ip(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run(['ip'] + list(args), capture_output=True, text=True, timeout=30)


def _check(result: subprocess.CompletedProcess) -> None:
  if result.returncode != 0:
    raise AssertionError(f'{result.args} failed: {result.stderr.strip()}')


@pytest.fixture
def hosts() -> Iterator[Dict[str, str]]:
  """Two fresh network namespaces ('learner', 'actors') joined by a veth pair; removed after."""
  if shutil.which('ip') is None:
    pytest.skip('the ip command (iproute2) is not installed')
  tag = f'{os.getpid()}_{uuid.uuid4().hex[:6]}'
  names = {'learner': f'seed_rl_learner_{tag}', 'actors': f'seed_rl_actors_{tag}'}
  created: List[str] = []
  try:
    for name in names.values():
      result = _ip('netns', 'add', name)
      if result.returncode != 0:
        pytest.skip(f'network namespaces are not permitted here (ip netns add: '
                    f'{result.stderr.strip()})')
      created.append(name)
    learner, actors = names['learner'], names['actors']
    # The pair is created inside the learner's namespace, its peer moved straight into the
    # actors' one: the host's own network is never touched.
    result = _ip('-n', learner, 'link', 'add', 'veth0', 'type', 'veth', 'peer', 'name',
                 'veth0', 'netns', actors)
    if result.returncode != 0:
      pytest.skip(f'cannot create a veth pair here (ip link add: {result.stderr.strip()})')
    for name, address in ((learner, LEARNER_IP), (actors, ACTORS_IP)):
      _check(_ip('-n', name, 'addr', 'add', f'{address}/30', 'dev', 'veth0'))
      _check(_ip('-n', name, 'link', 'set', 'veth0', 'up'))
      _check(_ip('-n', name, 'link', 'set', 'lo', 'up'))
    yield names
  finally:
    for name in created:
      _ip('netns', 'delete', name)


@pytest.fixture
def credentials(tmp_path) -> Dict[str, str]:
  """A self-signed certificate naming the learner's IP, its key and a token file."""
  if shutil.which('openssl') is None:
    pytest.skip('openssl is not installed (needed to make the test certificate)')
  cert, key, token = tmp_path / 'learner.pem', tmp_path / 'learner.key', tmp_path / 'token'
  subprocess.run(
      ['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
       '-nodes', '-keyout', str(key), '-out', str(cert), '-days', '2', '-subj', '/CN=learner',
       '-addext', f'subjectAltName=IP:{LEARNER_IP}'],
      check=True, capture_output=True, timeout=60)
  token.write_text(uuid.uuid4().hex + '\n')
  return {'cert': str(cert), 'key': str(key), 'token': str(token)}


def _tf_config(task_type: str) -> str:
  """What Vertex AI puts in each replica's environment (with our veth addresses as hosts)."""
  return json.dumps({
      'cluster': {'workerpool0': [f'{LEARNER_IP}:{PORT}'],
                  'workerpool1': [f'{ACTORS_IP}:{PORT}']},
      'task': {'type': task_type, 'index': 0}, 'environment': 'cloud'})


def _in_namespace(started: List[processes.Process], log_dir, name: str, namespace: str,
                  argv: Sequence[str], env: Dict[str, str]) -> processes.Process:
  process = processes.Process(name, ['ip', 'netns', 'exec', namespace] + list(argv), log_dir,
                              env=env)
  started.append(process)
  return process


_PROBE = r'''
import sys
from seed_rl import grpc
cert, token = open(sys.argv[2], 'rb').read(), open(sys.argv[3], 'rb').read().strip()
def attempt(what, **kwargs):
  try:
    grpc.Client(sys.argv[1], **kwargs).close()
    print(what, 'connected')
  except Exception as e:  # pylint: disable=broad-except
    print(what, type(e).__name__)
# Waits for the learner to come up, then is refused.
attempt('wrong_token', timeout=240, tls_root_certificates=cert, token=b'not-the-token')
attempt('no_token', timeout=30, tls_root_certificates=cert)
attempt('plain_text', timeout=3, token=token)
attempt('good', timeout=30, tls_root_certificates=cert, token=token)
'''


def _veth_rx_bytes(namespace: str) -> int:
  result = _ip('-n', namespace, '-s', '-j', 'link', 'show', 'dev', 'veth0')
  _check(result)
  return json.loads(result.stdout)[0]['stats64']['rx']['bytes']


@pytest.mark.timeout(300)
def test_learner_and_actors_on_two_hosts_with_tls_and_token(hosts, credentials, tmp_path):
  logdir = tmp_path / 'logdir'
  security = [f'--grpc_token_file={credentials["token"]}',
              f'--grpc_tls_cert_file={credentials["cert"]}',
              f'--grpc_tls_key_file={credentials["key"]}',
              f'--grpc_tls_ca_file={credentials["cert"]}']
  # 2 actors x 2 envs; 20 training steps of 2 unrolls of 10 steps.
  forwarded = ['--env_name=CartPole-v1', f'--logdir={logdir}', '--unroll_length=10',
               '--batch_size=2', '--total_environment_frames=400', '--mlp_sizes=16'] + security
  run_py = [sys.executable, RUN_PY, '--environment=gym', '--agent=vtrace',
            '--actors_per_worker=2', '--env_batch_size=2', '--stop_grace_secs=30', '--']
  started: List[processes.Process] = []
  try:
    learner = _in_namespace(started, tmp_path, 'learner_host', hosts['learner'],
                            run_py + forwarded, {'TF_CONFIG': _tf_config('workerpool0'),
                                                 'CLUSTER_SPEC': ''})
    # From the actors' host: clients without the token or without TLS are refused.
    probe = _in_namespace(started, tmp_path, 'probe', hosts['actors'],
                          [sys.executable, '-c', _PROBE, f'{LEARNER_IP}:{PORT}',
                           credentials['cert'], credentials['token']], {})
    assert probe.wait(260) == 0, probe.log()[-3000:] + learner.log()[-3000:]
    results = dict(line.split() for line in probe.log().splitlines()
                   if re.fullmatch(r'\w+ \w+', line))
    assert results == {'wrong_token': 'UnauthenticatedError', 'no_token': 'UnauthenticatedError',
                       'plain_text': 'UnavailableError', 'good': 'connected'}, probe.log()

    actors = _in_namespace(started, tmp_path, 'actors_host', hosts['actors'],
                           run_py + forwarded, {'TF_CONFIG': _tf_config('workerpool1'),
                                                'CLUSTER_SPEC': ''})
    assert learner.wait(240) == 0, learner.log()[-4000:] + actors.log()[-3000:]
    learner_log = learner.log()
    assert f'--server_address=[::]:{PORT}' in learner_log
    assert 'Training finished at iteration 20 (400 environment frames)' in learner_log
    assert re.search(r'run\.py: learner \(pid \d+\) exited with status 0\.', learner_log)
    actors_log = actors.log()
    for task in (0, 1):
      assert f'Actor {task} connected to {LEARNER_IP}:{PORT}' in actors_log
    # The experiment's traffic crossed the veth pair.
    assert _veth_rx_bytes(hosts['learner']) > 20000

    # The learner told the actors that training is finished: they stop, and so does run.py.
    assert actors.wait(60) == 0, actors.log()[-3000:]
    assert len(re.findall(r'actor_\d \(pid \d+\) exited with status 0\.', actors.log())) == 2
  finally:
    for process in started:
      process.kill()
