"""seed_rl.launch.local_run and scripts/runs.sh: the lock, port reservations and registry that
keep run_local.sh's runs apart. Owners are real processes (`sleep`), ports real sockets."""

import contextlib
import os
import re
import socket
import subprocess
import sys

import pytest

from seed_rl.launch import local_run
from seed_rl.shm import address as shm_address
from tests import processes

ROOT = processes.ROOT


@pytest.fixture(autouse=True)
def runtime(tmp_path, monkeypatch):
  """A runtime directory (port reservations) of the test's own."""
  path = tmp_path / 'runtime'
  monkeypatch.setenv('SEED_RL_RUNTIME_DIR', str(path))
  monkeypatch.delenv('SEED_RL_RUN_HOST', raising=False)
  return path


@pytest.fixture
def owners():
  """Starts `sleep` processes standing for run_local.sh; kills them at the end."""
  started = []

  def start():
    process = subprocess.Popen(['sleep', '300'])
    started.append(process)
    return process

  yield start
  for process in started:
    process.kill()
    process.wait(10)


def _free_tcp_port():
  with contextlib.closing(socket.socket()) as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _acquire(tmp_path, name, address, owner, **kwargs):
  return local_run.acquire(str(tmp_path / name), address, owner.pid, str(ROOT),
                           str(tmp_path / 'registry'), **kwargs)


@pytest.mark.timeout(30)
@pytest.mark.parametrize('address, parsed', [
    ('localhost:8686', ('tcp', 'localhost', 8686)),
    ('[::]:8686', ('tcp', '::', 8686)),
    ('[fd00::1]:99', ('tcp', 'fd00::1', 99)),
    ('0.0.0.0:1', ('tcp', '0.0.0.0', 1)),
    ('unix:/tmp/a.sock', ('unix', '/tmp/a.sock', None)),
    ('unix:///tmp/a.sock', ('unix', '/tmp/a.sock', None)),
    ('unix-abstract:x', ('other', 'unix-abstract:x', None)),
    ('nonsense', ('other', 'nonsense', None)),
])
def test_parse_address(address, parsed):
  assert local_run.parse_address(address) == parsed


@pytest.mark.timeout(30)
def test_a_run_owns_its_logdir_until_its_owner_is_gone(tmp_path, owners):
  first = owners()
  port = _free_tcp_port()
  taken = _acquire(tmp_path, 'logdir', f'localhost:{port}', first, tensorboard_port='none')
  lock = local_run.read_record(taken['lock'])
  assert lock['run_id'] == taken['run_id'] and lock['owner_pid'] == str(first.pid)
  assert lock['owner_start'] == local_run.pid_start(first.pid)
  assert (tmp_path / 'registry' / taken['run_id']).read_text() == (
      f'logdir={tmp_path / "logdir"}\n')
  assert taken['tensorboard_port'] == '' and taken['tmux_session'] == ''

  second = owners()
  with pytest.raises(local_run.Refused) as refused:
    _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', second)
  message = str(refused.value)
  assert f'the logdir {tmp_path / "logdir"} is in use by another run (run_local.sh pid ' \
         f'{first.pid}' in message
  assert '--logdir=DIR' in message and '--server_address=localhost:' in message
  assert f'./stop_local.sh --logdir={tmp_path / "logdir"}' in message
  assert '\n' not in message

  first.kill()
  first.wait(10)
  retaken = _acquire(tmp_path, 'logdir', f'localhost:{port}', second, tensorboard_port='none')
  assert local_run.read_record(retaken['lock'])['owner_pid'] == str(second.pid)


@pytest.mark.timeout(30)
def test_a_reused_pid_is_not_the_owner(tmp_path, owners):
  owner = owners()
  taken = _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owner,
                   tensorboard_port='none')
  text = (tmp_path / 'logdir' / 'run_local.lock').read_text()
  start = local_run.read_record(taken['lock'])['owner_start']
  (tmp_path / 'logdir' / 'run_local.lock').write_text(
      text.replace(f'owner_start={start}', 'owner_start=1'))
  assert owner.poll() is None  # The pid is alive, but it started later than the lock says.
  second = owners()
  retaken = _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', second,
                     tensorboard_port='none')
  lock = local_run.read_record(retaken['lock'])
  assert lock['owner_pid'] == str(second.pid) and lock['run_id'] == retaken['run_id']
  assert retaken['run_id'] != taken['run_id']


@pytest.mark.timeout(30)
def test_processes_left_by_a_dead_run_local_keep_the_logdir(tmp_path, owners):
  owner, learner = owners(), owners()
  taken = _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owner,
                   tensorboard_port='none')
  with open(taken['pidfile'], 'w') as f:
    f.write(f'learner {learner.pid} {local_run.pid_start(learner.pid)}\n')
  owner.kill()
  owner.wait(10)
  with pytest.raises(local_run.Refused, match=rf'has exited but learner {learner.pid} still run'):
    _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners())


@pytest.mark.timeout(30)
def test_a_lock_of_another_host_is_not_taken_over(tmp_path, owners, monkeypatch):
  monkeypatch.setenv('SEED_RL_RUN_HOST', 'elsewhere')
  _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners(),
           tensorboard_port='none')
  monkeypatch.delenv('SEED_RL_RUN_HOST')
  with pytest.raises(local_run.Refused, match=r'on host elsewhere.*remove .*run_local.lock if'):
    _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners())


@pytest.mark.timeout(30)
def test_a_reserved_address_is_refused_naming_the_run_that_holds_it(tmp_path, owners):
  first = owners()
  port = _free_tcp_port()
  _acquire(tmp_path, 'one', f'localhost:{port}', first, tensorboard_port='none')
  with pytest.raises(local_run.Refused) as refused:
    _acquire(tmp_path, 'two', f'[::]:{port}', owners())  # Same port, other host part.
  message = str(refused.value)
  assert f'the learner address [::]:{port} is taken by the run in {tmp_path / "one"} ' \
         f'(run_local.sh pid {first.pid}' in message
  assert '--server_address=[::]:' in message and '(free now)' in message
  first.kill()
  first.wait(10)
  _acquire(tmp_path, 'two', f'localhost:{port}', owners(), tensorboard_port='none')


_LISTENER = r'''
import socket, sys, time
s = socket.socket()
s.bind(('127.0.0.1', int(sys.argv[1])))
s.listen()
print('listening', flush=True)
time.sleep(300)
'''


@pytest.mark.timeout(30)
def test_a_port_in_use_outside_any_run_is_refused_and_its_learner_named(tmp_path, owners):
  port = _free_tcp_port()
  # A learner this module did not start: found by its command line.
  learner = subprocess.Popen(
      [sys.executable, '-c', _LISTENER, str(port), '--run_mode=learner',
       f'--server_address=localhost:{port}', '--logdir=/somewhere/else'],
      stdout=subprocess.PIPE, text=True)
  try:
    assert learner.stdout.readline().strip() == 'listening'
    assert not local_run.tcp_port_free('localhost', port)
    with pytest.raises(local_run.Refused) as refused:
      _acquire(tmp_path, 'logdir', f'localhost:{port}', owners())
    assert (f'the learner address localhost:{port} is in use by the learner pid {learner.pid} '
            'of the run in /somewhere/else') in str(refused.value)
  finally:
    learner.kill()
    learner.wait(10)
  assert local_run.tcp_port_free('localhost', port)


@pytest.mark.timeout(30)
def test_unix_sockets_count_when_a_server_answers(tmp_path, owners):
  path = tmp_path / 'learner.sock'
  server = socket.socket(socket.AF_UNIX)
  server.bind(str(path))
  server.listen()
  with pytest.raises(local_run.Refused, match='is in use by another program'):
    _acquire(tmp_path, 'logdir', f'unix:{path}', owners(), tensorboard_port='none')
  server.close()  # The file stays: a stale socket, which the learner replaces.
  assert path.exists() and not local_run.unix_socket_live(str(path))
  _acquire(tmp_path, 'logdir', f'unix:{path}', owners(), tensorboard_port='none')


@pytest.mark.timeout(30)
def test_tensorboard_ports(tmp_path, owners):
  busy = socket.socket()
  busy.bind(('127.0.0.1', 0))
  busy.listen()
  port = busy.getsockname()[1]
  try:
    assert local_run.free_port('localhost', port, None) > port
    with pytest.raises(local_run.Refused, match=f'TensorBoard port {port} '
                                                r'\(SEED_RL_TENSORBOARD_PORT\) is in use'):
      _acquire(tmp_path, 'a', f'localhost:{_free_tcp_port()}', owners(),
               tensorboard_port=str(port))
  finally:
    busy.close()
  first = _acquire(tmp_path, 'a', f'localhost:{_free_tcp_port()}', owners(),
                   tensorboard_port='auto')
  second = _acquire(tmp_path, 'b', f'localhost:{_free_tcp_port()}', owners(),
                    tensorboard_port='auto')
  assert int(first['tensorboard_port']) >= 6006
  assert int(second['tensorboard_port']) != int(first['tensorboard_port'])  # Reserved.
  with pytest.raises(local_run.Refused, match=f'by the run in {tmp_path / "a"}'):
    _acquire(tmp_path, 'c', f'localhost:{_free_tcp_port()}', owners(),
             tensorboard_port=first['tensorboard_port'])


@pytest.mark.timeout(30)
def test_tmux_session_names_are_per_logdir():
  one = local_run.tmux_session_name('/tmp/seed_rl/gym_vtrace')
  assert one.startswith('seed_rl_gym_vtrace_') and len(one) == len('seed_rl_gym_vtrace_') + 4
  assert local_run.tmux_session_name('/other/gym_vtrace') != one
  assert local_run.tmux_session_name('/runs/v1.2:x').startswith('seed_rl_v1_2_x_')


@pytest.mark.timeout(30)
def test_release_removes_only_the_records_of_its_own_run(tmp_path, owners):
  taken = _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners(),
                   tensorboard_port='auto')
  lock = local_run.read_record(taken['lock'])
  reservations = lock['reservation'].split('\n')
  assert len(reservations) == 2 and all(os.path.exists(r) for r in reservations)

  def release(run_id):
    subprocess.run(['bash', '-c', 'source scripts/runs.sh; seed_rl_release_run "$1" "$2"', '-',
                    taken['lock'], run_id], cwd=ROOT, check=True, timeout=20)

  release('someone-else')
  assert os.path.exists(taken['lock']) and all(os.path.exists(r) for r in reservations)
  release(taken['run_id'])
  assert not os.path.exists(taken['lock'])
  assert not any(os.path.exists(r) for r in reservations)
  assert not (tmp_path / 'registry' / taken['run_id']).exists()


@pytest.mark.timeout(30)
def test_command_line(tmp_path, owners):
  owner = owners()
  command = [sys.executable, '-m', 'seed_rl.launch.local_run', 'acquire',
             f'--logdir={tmp_path / "logdir"}', f'--address=localhost:{_free_tcp_port()}',
             f'--owner_pid={owner.pid}', f'--checkout={ROOT}',
             f'--registry={tmp_path / "registry"}', '--tmux']
  env = dict(os.environ, PYTHONPATH=str(ROOT), TMUX_TMPDIR=str(tmp_path))
  first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=20)
  assert first.returncode == 0, first.stderr
  fields = dict(line.split('=', 1) for line in first.stdout.splitlines())
  assert set(fields) == {'run_id', 'lock', 'pidfile', 'tensorboard_port', 'tmux_session',
                         'learner_address', 'actor_address'}
  assert fields['learner_address'] == fields['actor_address'] == command[5][len('--address='):]
  assert fields['tmux_session'].startswith('seed_rl_logdir_')
  second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=20)
  assert second.returncode == 1
  assert second.stderr.startswith('run_local.sh: the logdir ')
  assert len(second.stderr.strip().splitlines()) == 1


@pytest.mark.timeout(30)
def test_local_shm_adds_an_address_of_the_logdirs_own_for_the_actors(tmp_path, owners):
  port = _free_tcp_port()
  taken = _acquire(tmp_path, 'logdir', f'localhost:{port}', owners(), tensorboard_port='none',
                   local_shm=True)
  name = local_run.shm_name(str(tmp_path / 'logdir'))
  assert name.startswith('shm:logdir_') and len(name) == len('shm:logdir_') + 12
  assert taken['learner_address'] == f'localhost:{port},{name}'
  assert taken['actor_address'] == name
  lock = local_run.read_record(taken['lock'])
  assert lock['address'] == taken['learner_address']
  assert {os.path.basename(r) for r in lock['reservation'].split('\n')} == {
      f'tcp-{port}', f'shm-{name[len("shm:"):]}'}
  # Another logdir gets another name; the same logdir is refused while its run lives.
  other = _acquire(tmp_path, 'other', f'localhost:{_free_tcp_port()}', owners(),
                   tensorboard_port='none', local_shm=True)
  assert other['actor_address'] not in (name, '') and other['actor_address'].startswith('shm:')
  with pytest.raises(local_run.Refused, match='is in use by another run'):
    _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners(), local_shm=True)
  # Where its gRPC address is taken, the address suggested keeps the actors on shared memory.
  with pytest.raises(local_run.Refused) as refused:
    _acquire(tmp_path, 'third', f'localhost:{port}', owners(), local_shm=True)
  third = local_run.shm_name(str(tmp_path / 'third'))
  assert re.search(rf'pick another with --server_address=localhost:\d+,{third} \(free now\)',
                   str(refused.value)), str(refused.value)


@pytest.mark.timeout(30)
def test_a_shared_memory_address_served_outside_any_run_is_refused(tmp_path, owners):
  name = local_run.shm_name(str(tmp_path / 'logdir'))
  server = socket.socket(socket.AF_UNIX)
  server.bind(shm_address.socket_address(name))
  server.listen()
  try:
    with pytest.raises(local_run.Refused) as refused:
      _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners(), local_shm=True)
    assert str(refused.value) == (f'the learner address {name} is in use by another program; '
                                  'give this run another --logdir=DIR')
    # Listed by the user: the way out is another name.
    with pytest.raises(local_run.Refused, match=f'the learner address {name} is in use by '
                                                f'another program; pick another with '
                                                f'--server_address={name}.2'):
      _acquire(tmp_path, 'other', f'localhost:{_free_tcp_port()},{name}', owners())
  finally:
    server.close()
  # Once that server is gone, its name is free again.
  taken = _acquire(tmp_path, 'logdir', f'localhost:{_free_tcp_port()}', owners(),
                   tensorboard_port='none', local_shm=True)
  assert taken['actor_address'] == name


@pytest.mark.timeout(30)
def test_a_learner_list_of_addresses_is_checked_and_reserved_address_by_address(tmp_path, owners):
  first = owners()
  port = _free_tcp_port()
  taken = _acquire(tmp_path, 'one', f'localhost:{port},shm:mine', first,
                   tensorboard_port='none')
  assert taken['learner_address'] == taken['actor_address'] == f'localhost:{port},shm:mine'
  with pytest.raises(local_run.Refused, match=f'the learner address shm:mine is taken by the '
                                              f'run in {tmp_path / "one"}'):
    _acquire(tmp_path, 'two', f'localhost:{_free_tcp_port()},shm:mine', owners())
  with pytest.raises(local_run.Refused, match=f'the learner address localhost:{port} is taken'):
    _acquire(tmp_path, 'two', f'shm:yours,localhost:{port}', owners())
  with pytest.raises(local_run.Refused, match='has an empty item'):
    _acquire(tmp_path, 'two', 'shm:yours,', owners())
