"""Tests of gcp/run.py, the container entrypoint: roles, commands, failures and signals.

Role decisions are checked through `--dry_run` (the commands it prints); the supervision tests
run the real `gym vtrace` entry point as the children.
"""

import json
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, List, Sequence

import pytest

from tests import processes

ROOT = processes.ROOT
RUN_PY = str(ROOT / 'gcp' / 'run.py')
MODULE = 'seed_rl.environments.gym.vtrace_main'
ARGS = ('--environment=gym', '--agent=vtrace')

# The shapes the cluster description takes.
VERTEX_CLUSTER = {
    'workerpool0': ['cmle-training-workerpool0-ab12cd-0:2222'],
    'workerpool1': ['cmle-training-workerpool1-ab12cd-0:2222',
                    'cmle-training-workerpool1-ab12cd-1:2222',
                    'cmle-training-workerpool1-ab12cd-2:2222'],
}
AI_PLATFORM_CLUSTER = {'master': ['master-0:2222'], 'worker': ['worker-0:2222', 'worker-1:2222']}
TF_CLUSTER = {'chief': ['10.0.0.1:8686'], 'worker': ['10.0.0.2:8686', '10.0.0.3:8686']}


def _tf_config(cluster, task_type, index, **extra) -> Dict[str, str]:
  return {'TF_CONFIG': json.dumps(dict(cluster=cluster, task=dict(type=task_type, index=index),
                                       **extra))}


def _cluster_spec(cluster, task_type, index) -> Dict[str, str]:
  """CLUSTER_SPEC as Vertex AI writes it (job is a JSON string, plus environment, open_ports)."""
  return {'CLUSTER_SPEC': json.dumps({
      'cluster': cluster, 'environment': 'cloud',
      'task': {'type': task_type, 'index': index, 'trial': ''},
      'job': json.dumps({'python_module': '', 'package_uris': [], 'job_args': []}),
      'open_ports': [3333]})}


def _environment(cluster_env: Dict[str, str]) -> Dict[str, str]:
  environment = {k: v for k, v in os.environ.items() if k not in ('TF_CONFIG', 'CLUSTER_SPEC')}
  environment.update(cluster_env)
  return environment


def _run_py(cluster_env: Dict[str, str], *args: str, forwarded: Sequence[str] = (),
            dry_run: bool = True) -> subprocess.CompletedProcess:
  argv = [sys.executable, RUN_PY] + list(args) + (['--dry_run'] if dry_run else [])
  if forwarded:
    argv += ['--'] + list(forwarded)
  return subprocess.run(argv, env=_environment(cluster_env), capture_output=True, text=True,
                        timeout=60, cwd='/')


def _commands(result: subprocess.CompletedProcess) -> List[List[str]]:
  assert result.returncode == 0, result.stderr
  return [shlex.split(line) for line in result.stdout.splitlines()]


def _flags(argv: List[str]) -> Dict[str, str]:
  """The --name=value flags of a printed command (after `python -m MODULE`)."""
  assert argv[:3] == [sys.executable, '-m', MODULE], argv
  flags = {}
  for argument in argv[3:]:
    name, _, value = argument[2:].partition('=')
    assert name not in flags, f'--{name} given twice in {argv}'
    flags[name] = value
  return flags


def _error(result: subprocess.CompletedProcess) -> str:
  assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
  assert result.stdout == ''
  return result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize('cluster_env, port, num_workers', [
    (_tf_config(TF_CLUSTER, 'chief', 0), 8686, 2),
    (_tf_config(AI_PLATFORM_CLUSTER, 'master', 0), 2222, 2),
    (_tf_config(VERTEX_CLUSTER, 'workerpool0', 0), 2222, 3),
    (_cluster_spec(VERTEX_CLUSTER, 'workerpool0', 0), 2222, 3),
], ids=['chief', 'master', 'workerpool0', 'cluster_spec_workerpool0'])
def test_learner_roles(cluster_env, port, num_workers):
  forwarded = ['--env_name=CartPole-v1', '--job-dir=gs://bucket/job', '--batch_size', '8']
  commands = _commands(_run_py(cluster_env, *ARGS, '--actors_per_worker=4',
                               '--env_batch_size=3', forwarded=forwarded))
  assert len(commands) == 1
  assert commands[0][-len(forwarded):] == forwarded
  flags = _flags(commands[0][:-2])  # '--batch_size 8' is two arguments.
  assert flags == {
      'run_mode': 'learner', 'server_address': f'[::]:{port}',
      # Every environment of every actor: hosts x actors per host x env_batch_size.
      'num_envs': str(num_workers * 4 * 3), 'env_batch_size': '3',
      'env_name': 'CartPole-v1', 'job-dir': 'gs://bucket/job'}


@pytest.mark.timeout(60)
@pytest.mark.parametrize('cluster_env, index, learner, num_workers', [
    (_tf_config(TF_CLUSTER, 'worker', 1), 1, '10.0.0.1:8686', 2),
    (_tf_config(AI_PLATFORM_CLUSTER, 'worker', 0), 0, 'master-0:2222', 2),
    (_tf_config(VERTEX_CLUSTER, 'workerpool1', 1), 1,
     'cmle-training-workerpool0-ab12cd-0:2222', 3),
    (_cluster_spec(VERTEX_CLUSTER, 'workerpool1', 2), 2,
     'cmle-training-workerpool0-ab12cd-0:2222', 3),
], ids=['worker', 'ai_platform_worker', 'workerpool1', 'cluster_spec_workerpool1'])
def test_actor_roles(cluster_env, index, learner, num_workers):
  commands = _commands(_run_py(cluster_env, *ARGS, '--actors_per_worker=3',
                               '--env_batch_size=4', forwarded=['--env_name=Acrobot-v1']))
  assert len(commands) == 3
  for actor, command in enumerate(commands):
    assert _flags(command) == {
        'run_mode': 'actor', 'task': str(index * 3 + actor), 'server_address': learner,
        'num_envs': str(num_workers * 3 * 4), 'env_batch_size': '4',
        'env_name': 'Acrobot-v1'}


@pytest.mark.timeout(60)
def test_task_ids_cover_every_actor_once():
  tasks = []
  for index in range(3):
    for command in _commands(_run_py(_tf_config(VERTEX_CLUSTER, 'workerpool1', index), *ARGS,
                                     '--actors_per_worker=2')):
      tasks.append(int(_flags(command)['task']))
  assert tasks == list(range(6))


@pytest.mark.timeout(60)
def test_defaults_and_ipv6_learner_address():
  cluster = {'workerpool0': ['[fd00::1]:2222'], 'workerpool1': ['[fd00::2]:2222']}
  commands = _commands(_run_py(_tf_config(cluster, 'workerpool1', 0), *ARGS))
  # One actor with one environment per host by default, no forwarded flags.
  assert [_flags(c) for c in commands] == [{
      'run_mode': 'actor', 'task': '0', 'server_address': '[fd00::1]:2222', 'num_envs': '1',
      'env_batch_size': '1'}]
  # The original's default environment.
  commands = _commands(_run_py(_tf_config(cluster, 'workerpool0', 0)))
  assert commands[0][2] == 'seed_rl.environments.football.vtrace_main'


@pytest.mark.timeout(60)
def test_tf_config_is_preferred_and_cluster_spec_is_the_fallback():
  both = dict(_tf_config(VERTEX_CLUSTER, 'workerpool0', 0),
              **_cluster_spec(VERTEX_CLUSTER, 'workerpool1', 0))
  assert _flags(_commands(_run_py(both, *ARGS))[0])['run_mode'] == 'learner'
  # A TF_CONFIG without a task (e.g. '{}') leaves the decision to CLUSTER_SPEC.
  fallback = dict(_cluster_spec(VERTEX_CLUSTER, 'workerpool1', 0), TF_CONFIG='{}')
  assert _flags(_commands(_run_py(fallback, *ARGS))[0])['run_mode'] == 'actor'


@pytest.mark.timeout(60)
def test_workers_flag_for_a_cluster_without_actor_hosts():
  learner_only = _tf_config({'chief': ['10.0.0.1:8686']}, 'chief', 0)
  assert 'pass --workers=N' in _error(_run_py(learner_only, *ARGS))
  commands = _commands(_run_py(learner_only, *ARGS, '--workers=5', '--env_batch_size=2'))
  assert _flags(commands[0])['num_envs'] == '10'
  # Where the cluster lists the actor hosts, --workers must agree with it.
  message = _error(_run_py(_tf_config(TF_CLUSTER, 'chief', 0), *ARGS, '--workers=5'))
  assert '--workers=5 but the cluster in TF_CONFIG lists 2 actor host(s)' in message
  assert _commands(_run_py(_tf_config(TF_CLUSTER, 'chief', 0), *ARGS, '--workers=2'))


@pytest.mark.timeout(60)
@pytest.mark.parametrize('cluster_env, message', [
    ({}, 'No cluster description: neither TF_CONFIG nor CLUSTER_SPEC'),
    ({'TF_CONFIG': '{"cluster": '}, 'TF_CONFIG is not valid JSON'),
    ({'CLUSTER_SPEC': '[1, 2]'}, 'CLUSTER_SPEC must be a JSON object'),
    (_tf_config(dict(TF_CLUSTER, ps=['10.0.0.9:2222']), 'ps', 0),
     "Unexpected task type 'ps' in TF_CONFIG"),
    (_tf_config(TF_CLUSTER, 'evaluator', 0), "Unexpected task type 'evaluator'"),
    (_cluster_spec(dict(VERTEX_CLUSTER, workerpool2=['h:2222']), 'workerpool2', 0),
     "Unexpected task type 'workerpool2' in CLUSTER_SPEC"),
    (_tf_config(TF_CLUSTER, 'worker', 2), "index 2 in TF_CONFIG is out of range"),
    (_tf_config(TF_CLUSTER, 'worker', 'one'), "task index 'one' is not an integer"),
    (_tf_config(TF_CLUSTER, 'chief', 1), 'there is only one learner'),
    (_tf_config({'worker': ['a:1']}, 'worker', 0), 'lists no learner host'),
    (_tf_config(dict(TF_CLUSTER, chief=['a:1', 'b:1']), 'chief', 0), 'exactly one host'),
    (_tf_config({'chief': ['learner-without-port']}, 'chief', 0),
     "'learner-without-port' in the cluster is not host:port"),
    (_tf_config({'chief': ['a:1']}, 'worker', 0), 'lists no actor hosts'),
], ids=['missing', 'bad_json', 'not_object', 'ps', 'evaluator', 'workerpool2', 'index_range',
        'index_type', 'two_learner_indices', 'no_learner', 'two_learners', 'no_port',
        'no_actor_pool'])
def test_bad_cluster_descriptions(cluster_env, message):
  assert message in _error(_run_py(cluster_env, *ARGS))


@pytest.mark.timeout(60)
@pytest.mark.parametrize('args, forwarded, message', [
    (ARGS, ['--num_envs=3'], '--num_envs=3 after "--" is set by run.py'),
    (ARGS, ['--task', '1'], '--task after "--" is set by run.py'),
    (ARGS, ['--server_address=[::]:1'], 'is set by run.py'),
    (ARGS, ['-run_mode=actor'], 'is set by run.py'),
    (ARGS + ('--actors_per_worker=0',), [], '--actors_per_worker must be at least 1'),
    (ARGS + ('--env_batch_size=0',), [], '--env_batch_size must be at least 1'),
    (('--environment=pong',), [], 'No entry point for --environment=pong --agent=vtrace'),
    (ARGS + ('stray',), [], "Unexpected arguments before \"--\": ['stray']"),
])
def test_bad_flags(args, forwarded, message):
  result = _run_py(_tf_config(TF_CLUSTER, 'chief', 0), *args, forwarded=forwarded)
  assert message in _error(result)


@pytest.mark.timeout(60)
def test_similar_forwarded_flags_are_not_mistaken_for_reserved_ones():
  forwarded = ['--num_envs_per_thing=2', '--taskset=x', '--num_eval_envs=1']
  command = _commands(_run_py(_tf_config(TF_CLUSTER, 'chief', 0), *ARGS, forwarded=forwarded))[0]
  assert command[-3:] == forwarded


@pytest.mark.timeout(60)
def test_main_module_runs_an_entry_point_of_your_own():
  result = _run_py(_tf_config(TF_CLUSTER, 'worker', 0), '--main_module=my_project.vtrace_main',
                   '--environment=does_not_matter')
  assert _commands(result)[0][:3] == [sys.executable, '-m', 'my_project.vtrace_main']


@pytest.mark.timeout(60)
def test_run_py_imports_neither_tensorflow_nor_seed_rl():
  code = (f'import runpy, sys\n'
          f'sys.argv = [{RUN_PY!r}, "--environment=gym", "--dry_run"]\n'
          f'try:\n'
          f'  runpy.run_path({RUN_PY!r}, run_name="__main__")\n'
          f'except SystemExit as e:\n'
          f'  assert e.code == 0, e.code\n'
          f'print(sorted(m for m in sys.modules if m.split(".")[0] in '
          f'("tensorflow", "seed_rl", "numpy", "grpc")))\n')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=_environment(_tf_config(TF_CLUSTER, 'chief', 0)), timeout=60,
                          cwd='/')
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines()[-1] == '[]'


# ---------------------------------------------------------------------------------------------
# Running the children: the real gym vtrace entry point.


def _free_port() -> int:
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


@pytest.fixture
def start_run_py(tmp_path):
  """Starts `python gcp/run.py ...` in its own process group; kills the group after the test."""
  started: List[processes.Process] = []

  def start(cluster_env: Dict[str, str], *args: str, forwarded: Sequence[str] = (),
            cwd: pathlib.Path = ROOT) -> processes.Process:
    argv = ['env', '-C', str(cwd), sys.executable, RUN_PY] + list(args)
    if forwarded:
      argv += ['--'] + list(forwarded)
    env = dict({name: '' for name in ('TF_CONFIG', 'CLUSTER_SPEC')}, **cluster_env)
    process = processes.Process(f'run_py_{len(started)}', argv, tmp_path, env=env)
    started.append(process)
    return process

  yield start
  for process in started:
    process.kill()


def _child_pids(run_py: processes.Process, count: int, timeout: float) -> Dict[str, int]:
  matches = run_py.wait_for(r'run\.py: started (\S+) \(pid (\d+)\)', timeout, count=count)
  return {m.group(1): int(m.group(2)) for m in matches}


def _wait_until_loaded(pids: Sequence[int], library: str, timeout: float) -> None:
  """Waits until every process has mapped `library` (e.g. grpc: the actor is past its imports)."""
  deadline = time.time() + timeout
  for pid in pids:
    while library not in pathlib.Path(f'/proc/{pid}/maps').read_text():
      assert time.time() < deadline, f'pid {pid} did not load {library} within {timeout} s'
      time.sleep(0.2)


def _gone(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return True
  return False


def _localhost_cluster(port: int) -> dict:
  return {'chief': [f'localhost:{port}'], 'worker': [f'localhost:{port}']}


@pytest.mark.timeout(120)
def test_a_failing_child_fails_run_py(tmp_path):
  # The learner refuses an unknown flag and exits with status 1: so does run.py.
  result = _run_py(_tf_config(_localhost_cluster(_free_port()), 'chief', 0), *ARGS,
                   forwarded=[f'--logdir={tmp_path}', '--no_such_flag=1'], dry_run=False)
  assert result.returncode == 1, result.stderr[-3000:]
  assert "Unknown command line flag 'no_such_flag'" in result.stderr
  assert re.search(r'run\.py: learner \(pid \d+\) exited with status 1\.', result.stderr)


@pytest.mark.timeout(120)
def test_a_dying_actor_stops_the_others_and_fails_run_py(start_run_py):
  # Two actors wait for a learner that never comes; one of them is killed.
  cluster_env = _tf_config(_localhost_cluster(_free_port()), 'worker', 0)
  run_py = start_run_py(cluster_env, *ARGS, '--actors_per_worker=2', '--stop_grace_secs=30')
  pids = _child_pids(run_py, 2, timeout=60)
  assert set(pids) == {'actor_0', 'actor_1'}
  _wait_until_loaded(pids.values(), 'cygrpc', timeout=60)
  os.kill(pids['actor_1'], signal.SIGKILL)
  assert run_py.wait(60) == 128 + signal.SIGKILL
  log = run_py.log()
  assert 'actor_1 failed; stopping the other processes' in log
  assert re.search(r'actor_0 \(pid \d+\) was killed by signal SIGTERM', log)
  assert all(_gone(pid) for pid in pids.values())


@pytest.mark.timeout(120)
def test_sigterm_reaches_every_actor(start_run_py):
  cluster_env = _tf_config(_localhost_cluster(_free_port()), 'worker', 0)
  run_py = start_run_py(cluster_env, *ARGS, '--actors_per_worker=2', '--env_batch_size=2')
  pids = _child_pids(run_py, 2, timeout=60)
  _wait_until_loaded(pids.values(), 'cygrpc', timeout=60)
  run_py.signal(signal.SIGTERM)
  assert run_py.wait(60) == 128 + signal.SIGTERM
  log = run_py.log()
  assert 'SIGTERM received; forwarding it to every child' in log
  for name, pid in pids.items():
    assert f'{name} (pid {pid}) was killed by signal SIGTERM' in log
    assert _gone(pid)


def _listening_ports(pid: int) -> set:
  """TCP ports on which process `pid` itself listens (not some other process of the host)."""
  inodes = set()
  for fd in os.listdir(f'/proc/{pid}/fd'):
    try:
      match = re.fullmatch(r'socket:\[(\d+)\]', os.readlink(f'/proc/{pid}/fd/{fd}'))
    except OSError:
      continue
    if match:
      inodes.add(match.group(1))
  ports = set()
  for table in ('tcp', 'tcp6'):
    for line in pathlib.Path(f'/proc/{pid}/net/{table}').read_text().splitlines()[1:]:
      fields = line.split()
      if fields[3] == '0A' and fields[9] in inodes:  # 0A: LISTEN.
        ports.add(int(fields[1].rsplit(':', 1)[1], 16))
  return ports


def _wait_until_listening(pid: int, port: int, process: processes.Process,
                          timeout: float) -> None:
  deadline = time.time() + timeout
  while port not in _listening_ports(pid):
    assert process.popen.poll() is None, process.log()[-4000:]
    assert time.time() < deadline, f'pid {pid} not listening on {port}:\n{process.log()[-4000:]}'
    time.sleep(0.3)


@pytest.mark.timeout(180)
def test_sigterm_makes_the_learner_checkpoint_and_run_py_succeed(start_run_py, tmp_path):
  port = _free_port()
  logdir = tmp_path / 'logdir'
  # Relative paths in the flags are relative to where run.py runs.
  run_py = start_run_py(_tf_config(_localhost_cluster(port), 'chief', 0), *ARGS,
                        forwarded=['--logdir=logdir', '--mlp_sizes=8'], cwd=tmp_path)
  learner_pid = _child_pids(run_py, 1, timeout=60)['learner']
  # Once the learner serves, its signal handlers are installed.
  _wait_until_listening(learner_pid, port, run_py, timeout=120)
  run_py.signal(signal.SIGTERM)
  assert run_py.wait(120) == 0, run_py.log()[-4000:]
  log = run_py.log()
  assert 'Signal 15 received: checkpointing and stopping' in log, log[-4000:]
  assert 'Saving checkpoint and SavedModel at iteration 0' in log, log[-4000:]
  assert f'run.py: learner (pid {learner_pid}) exited with status 0.' in log
  assert list(logdir.glob('ckpt-*.index')), list(logdir.iterdir())
  assert (logdir / 'saved_model' / 'saved_model.pb').exists()
