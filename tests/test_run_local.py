"""Tests of run_local.sh and stop_local.sh: argument and flag checks, real runs, runs kept apart
(logdir lock, learner address, tmux sessions), stopping a run."""

import contextlib
import os
import pathlib
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time

import pytest

from seed_rl.launch import local_run
from seed_rl.launch import progress_monitor
from tests import processes

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def run_registry(tmp_path, monkeypatch):
  """This test's runs are recorded in a registry of its own (not the checkout's real one)."""
  path = tmp_path / 'registry'
  monkeypatch.setenv('SEED_RL_RUN_REGISTRY', str(path))
  return path


def _run_local(*args, timeout=60, env=None):
  environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1')
  environment.update(env or {})
  return subprocess.run(['./run_local.sh'] + list(args), cwd=ROOT, env=environment,
                        capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('args, message', [
    ([], 'Usage:'),
    (['gym', 'vtrace'], 'Usage:'),
    (['pong', 'vtrace', '2'], "unknown ENV 'pong'"),
    (['gym', 'dqn', '2'], "unknown AGENT 'dqn'"),
    (['atari', 'sac', '2'], 'atari sac is not available yet'),
    (['gym', 'sac', '2'], 'gym sac is not available yet'),
    (['gym', 'vtrace', '02'], "NUM_ACTORS must be a positive integer (at least one actor), "
                              "got '02'"),
    (['gym', 'vtrace', '0'], "NUM_ACTORS must be a positive integer (at least one actor), "
                             "got '0'"),
    (['gym', 'vtrace', '-1'], 'NUM_ACTORS must be a positive integer'),
    (['gym', 'vtrace', 'two'], 'NUM_ACTORS must be a positive integer'),
    (['gym', 'vtrace', '2', '0'], 'ENV_BATCH_SIZE must be a positive integer'),
    (['gym', 'vtrace', '2', '1', 'extra'], "must be --flag=value, got 'extra'"),
    (['gym', 'vtrace', '2', '--num_envs=3'], 'set by run_local.sh from NUM_ACTORS'),
    (['gym', 'vtrace', '2', '--task=1'], 'set by run_local.sh'),
])
def test_run_local_rejects_bad_arguments(args, message):
  result = _run_local(*args)
  assert result.returncode != 0
  assert message in result.stderr
  if 'unknown' in message:
    assert 'Usage:' in result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize('args, message', [
    (['gym', 'vtrace', '2', '--inference_batch_size=3'],
     'run_local.sh: --inference_batch_size=3 is more than --num_envs=2 (NUM_ACTORS x '
     'ENV_BATCH_SIZE = 2 x 1)'),
    (['gym', 'vtrace', '2', '2', '--inference_batch_size=3'],
     'run_local.sh: --inference_batch_size=3 must be a multiple of --env_batch_size=2'),
    (['gym', 'vtrace', '2', '--batch_size=x'],
     "run_local.sh: flag --batch_size=x: invalid literal for int()"),
    (['gym', 'vtrace', '2', '--num_eval_envs=2'],
     'run_local.sh: --num_eval_envs=2 leaves no training environment'),
    (['atari', 'r2d2', '1', '--gme=Breakout'],
     'run_local.sh: unknown flag --gme=Breakout (did you mean --game?) of '
     'seed_rl.environments.atari.r2d2_main'),
    (['atari', 'vtrace', '1', '--game=Pongg'],
     "run_local.sh: --game: Unknown Atari game 'Pongg'"),
    # NUM_ACTORS is positional: not --num_action_repeats, the closest flag.
    (['gym', 'vtrace', '1', '--num_actorz=4'],
     'run_local.sh: unknown flag --num_actorz=4 of seed_rl.environments.gym.vtrace_main: the '
     'number of actors and of environments per actor are positional: ./run_local.sh ENV AGENT '
     'NUM_ACTORS [ENV_BATCH_SIZE]'),
])
def test_run_local_checks_the_flags_before_anything_starts(args, message, tmp_path):
  """Against the entry point's own flags and the learner's checks: one line, status 2."""
  result = _run_local(*args, f'--logdir={tmp_path / "logdir"}')
  assert result.returncode == 2, result.stdout + result.stderr
  assert result.stderr.startswith(message)
  assert len(result.stderr.strip().splitlines()) == 1, result.stderr
  assert not (tmp_path / 'logdir').exists()


def _seconds_since_log_line(log: str, pattern: str) -> float:
  """Seconds from the (absl) time of the first line of `log` that matches `pattern` to now."""
  match = re.search(r'^\w\d{4} (\d\d):(\d\d):(\d\d\.\d+) .*' + pattern, log, re.M)
  assert match, f'no line matches {pattern!r}'
  hours, minutes, seconds = (float(group) for group in match.groups())
  now = time.localtime()
  now_seconds = now.tm_hour * 3600 + now.tm_min * 60 + now.tm_sec + time.time() % 1
  return (now_seconds - (hours * 3600 + minutes * 60 + seconds)) % 86400


@pytest.mark.timeout(240)
def test_run_local_gym_vtrace_trains_and_stops_cleanly(tmp_path):
  logdir = tmp_path / 'logdir'
  result = _run_local('gym', 'vtrace', '2', f'--logdir={logdir}',
                      f'--server_address=unix:{tmp_path}/learner.sock',
                      '--unroll_length=10', '--batch_size=4', '--total_environment_frames=2000',
                      timeout=220)
  learner_log = (logdir / 'logs' / 'learner.log').read_text()
  end_s = _seconds_since_log_line(learner_log, 'Training finished at')
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  assert 'resuming from the checkpoint' not in result.stdout  # A new logdir.
  # A run that ends by itself stops nothing (no "stopping (the learner writes a checkpoint"),
  # and ends in seconds after the learner's last line: the actors stop then, not after its exit.
  assert 'seed_rl: stopping' not in result.stdout
  print(f'run_local.sh ended {end_s:.1f} s after the learner\'s "Training finished" line')
  assert end_s < 30
  # It ends with the commands that show what the run learned, which work as printed: with the
  # venv's programs the run used, relative to the checkout where they are in it.
  venv_bin = pathlib.Path(os.environ.get('SEED_RL_VENV', ROOT / '.venv')) / 'bin'
  where = ''
  if venv_bin.is_relative_to(ROOT):
    venv_bin, where = venv_bin.relative_to(ROOT), f' (in {ROOT})'
  end = result.stdout[result.stdout.index('seed_rl: training finished'):].splitlines()
  assert end[0] == f'seed_rl: training finished; next{where}:'
  evaluate, plot, tensorboard = (line.split('  #')[0].strip() for line in end[1:4])
  assert evaluate == (f'{venv_bin}/python -m seed_rl.evaluate --logdir={logdir} --episodes=10 '
                      '--greedy')
  assert plot == f'{venv_bin}/python -m seed_rl.plot {logdir} --out {logdir}/curve.png'
  assert tensorboard == f'{venv_bin}/tensorboard --logdir {logdir}'
  subprocess.run(shlex.split(plot), cwd=ROOT, check=True, capture_output=True, timeout=60)
  assert (logdir / 'curve.png').stat().st_size > 0
  # 2 actors fill a machine of 2 cores or fewer: the learner's TensorFlow gets fewer threads.
  fills_the_cores = len(os.sched_getaffinity(0)) <= 2
  assert ('the learner\'s TensorFlow uses 1 thread per op' in result.stdout) == fills_the_cores
  assert re.search(r'Progress: \d+/2000 environment frames', learner_log)
  assert 'Training finished at iteration 50' in learner_log
  # An explicit --server_address is the actors' too: no shared memory.
  assert f'learner on unix:{tmp_path}/learner.sock; actors connect to unix:' in result.stdout
  for task in (0, 1):
    assert (f'Actor {task} connected to unix:{tmp_path}/learner.sock' in
            (logdir / 'logs' / f'actor_{task}.log').read_text())
  # Nothing of the run is left.
  assert subprocess.run(['pgrep', '-f', '--', f'--logdir={logdir}'], capture_output=True).stdout == b''
  # The run is recorded: its flags (as a flagfile) and one line per learner start.
  assert '--total_environment_frames=2000.0' in (logdir / 'learner_flags.txt').read_text()

  # A second run in the same logdir (resumed at its budget) keeps the first run's logs.
  again = _run_local('gym', 'vtrace', '2', f'--logdir={logdir}',
                     f'--server_address=unix:{tmp_path}/learner.sock',
                     '--unroll_length=10', '--batch_size=4', '--total_environment_frames=2000',
                     timeout=220)
  assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
  assert (f'seed_rl: resuming from the checkpoint {logdir}/ckpt-50; delete {logdir} to start '
          'afresh') in again.stdout
  kept = [p for p in (logdir / 'logs').iterdir() if p.is_dir()]
  assert len(kept) == 1 and f'the previous run\'s logs are in {kept[0]}' in again.stdout
  assert (kept[0] / 'learner.log').read_text() == learner_log
  assert len((logdir / 'runs.jsonl').read_text().splitlines()) == 2


def test_run_local_knows_the_status_of_a_monitor_that_saw_training_finish():
  """run_local.sh stops TensorBoard (and any actor left) when the progress monitor exits with
  this status, while the learner still tears TensorFlow down."""
  script = (ROOT / 'run_local.sh').read_text()
  assert f'MONITOR_SAW_FINISHED={progress_monitor.EXIT_TRAINING_FINISHED} ' in script


def _sigint_as_in_a_terminal() -> None:
  """Gives the child SIGINT's default action, as a job started from a terminal has: a shell
  without job control starts its background jobs with SIGINT ignored, children inherit that,
  and bash cannot trap a signal that was ignored when it started."""
  signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.timeout(240)
@pytest.mark.parametrize('presses', [1, 2])
def test_ctrl_c_checkpoints_and_stops_every_process(tmp_path, presses):
  """Ctrl-C in a terminal: SIGINT to the whole process group; a second press while stopping
  must not leave the actors running."""
  logdir = tmp_path / 'logdir'
  environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1')
  process = subprocess.Popen(
      ['./run_local.sh', 'gym', 'vtrace', '2', f'--logdir={logdir}',
       f'--server_address=unix:{tmp_path}/learner.sock', '--unroll_length=10',
       '--batch_size=4'],
      cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      start_new_session=True, preexec_fn=_sigint_as_in_a_terminal)
  try:
    learner_log = logdir / 'logs' / 'learner.log'
    deadline = time.time() + 150
    while not (learner_log.exists() and 'Progress:' in learner_log.read_text()):
      assert process.poll() is None, process.stdout.read().decode()[-3000:]
      assert time.time() < deadline, 'no training step within 150 s'
      time.sleep(0.5)
    for press in range(presses):
      if press:
        time.sleep(1)
      os.killpg(process.pid, signal.SIGINT)  # What Ctrl-C sends to the terminal's job.
    output = process.communicate(timeout=90)[0].decode()
    assert 'stopping' in output
    log = learner_log.read_text()
    # The learner shares the terminal's process group: Ctrl-C reaches it (2) as well as the
    # SIGTERM of stop_local.sh (15), whichever comes first.
    assert re.search(r'Signal (2|15) received: checkpointing and stopping', log)
    assert re.search(r'Saving checkpoint and SavedModel at iteration [1-9]', log)
    assert 'Training finished' in log
    assert subprocess.run(['pgrep', '-f', '--', f'--logdir={logdir}'],
                          capture_output=True).stdout == b''
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
    subprocess.run(['pkill', '-9', '-f', '--', f'--logdir={logdir}'])


@pytest.mark.timeout(240)
def test_run_local_atari_r2d2_completes_training_steps(tmp_path):
  logdir = tmp_path / 'logdir'
  result = _run_local('atari', 'r2d2', '2', f'--logdir={logdir}',
                      f'--server_address=unix:{tmp_path}/learner.sock', '--unroll_length=5',
                      '--burn_in=2', '--batch_size=4', '--replay_ratio=1',
                      '--replay_buffer_size=20', '--replay_buffer_min_size=4',
                      '--total_environment_frames=800', timeout=220)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  learner_log = (logdir / 'logs' / 'learner.log').read_text()
  assert 'Replay buffer: ' in learner_log
  # 4 new unrolls of 5 steps, 4 frames per step: 80 frames per training step.
  assert 'Training finished at iteration 10 (800 environment frames)' in learner_log


@pytest.mark.timeout(240)
@pytest.mark.parametrize('agent, flags, frames', [
    # 1 unroll of 8 steps per training step, 4 frames per step.
    ('vtrace', ['--unroll_length=8', '--batch_size=1', '--batches_per_step=1',
                '--epochs_per_step=1'], 32),
    # 1 new unroll of 5 steps per training step.
    ('r2d2', ['--unroll_length=5', '--batch_size=2', '--replay_ratio=2',
              '--replay_buffer_min_size=2'], 20),
])
def test_run_local_atari_one_machine_flags_train_the_nature_network(tmp_path, agent, flags,
                                                                   frames):
  """The one-machine flag files README gives (smaller batches after them) train the Nature-DQN
  network, with evaluation environments, to the end of the budget."""
  logdir = tmp_path / 'logdir'
  result = _run_local('atari', agent, '1', '3',
                      f'--flagfile=seed_rl/environments/atari/one_machine/{agent}.flags',
                      f'--logdir={logdir}', f'--server_address=unix:{tmp_path}/learner.sock',
                      *flags, f'--total_environment_frames={frames * 2}', timeout=220)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  learner_log = (logdir / 'logs' / 'learner.log').read_text()
  assert f'Training finished at iteration 2 ({frames * 2} environment frames)' in learner_log
  recorded = (logdir / 'learner_flags.txt').read_text().split()
  for flag in ('--network=nature', '--num_eval_envs=2', '--nofull_action_space'):
    assert flag in recorded


@pytest.mark.timeout(240)
@pytest.mark.parametrize('agent, flags, iterations', [
    ('vtrace', ['--unroll_length=10', '--batch_size=2'], 10),
    ('sac', ['--batch_size=8', '--replay_ratio=2', '--mlp_size=16'], 50),
    # 2 unrolls of 10 steps per training step, 2 epochs of 1 minibatch.
    ('ppo', ['--unroll_length=10', '--batch_size=2', '--batch_size_transitions=0',
             '--step_size_transitions=0', '--epochs_per_step=2', '--batch_mode=shuffle'], 10),
])
def test_run_local_mujoco_trains_on_half_cheetah(tmp_path, agent, flags, iterations):
  logdir = tmp_path / 'logdir'
  result = _run_local('mujoco', agent, '1', f'--logdir={logdir}',
                      f'--server_address=unix:{tmp_path}/learner.sock',
                      '--total_environment_frames=200', *flags, timeout=220)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  assert 'training finished' in result.stdout
  learner_log = (logdir / 'logs' / 'learner.log').read_text()
  assert f'Training finished at iteration {iterations} (200 environment frames)' in learner_log
  actor_log = (logdir / 'logs' / 'actor_0.log').read_text()
  assert 'connected' in actor_log and 'Traceback' not in actor_log
  # MuJoCo's warnings go to the log (not to MUJOCO_LOG.TXT in the working directory).
  assert 'MuJoCo: compiler attribute' in actor_log
  assert subprocess.run(['pgrep', '-f', '--', f'--logdir={logdir}'], capture_output=True,
                        check=False).stdout == b''


@pytest.mark.timeout(60)
@pytest.mark.parametrize('engine', ['unreachable', 'no docker command'])
def test_run_local_docker_without_an_engine_fails_clearly(engine, tmp_path):
  """--docker needs a Docker engine: without one it says so and neither builds nor installs."""
  if engine == 'unreachable':
    env = {'DOCKER_HOST': 'unix:///nonexistent/docker.sock'}
    message = 'no Docker engine is reachable'
  else:
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for tool in ('bash', 'dirname', 'tail', 'timeout', 'cat'):
      (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {'PATH': str(bin_dir)}
    message = 'the docker command is not installed'
  result = _run_local('--docker', 'gym', 'vtrace', '2', '--env_name=CartPole-v1',
                      env=dict(env, SEED_RL_VENV=str(tmp_path / 'venv')))
  assert result.returncode == 1
  assert message in result.stderr
  assert 'build.sh' not in result.stderr
  assert not (tmp_path / 'venv').exists()


@pytest.mark.timeout(60)
def test_run_local_docker_checks_its_arguments_first():
  result = _run_local('--docker', 'gym', 'dqn', '2', env={'DOCKER_HOST': 'unix:///nonexistent'})
  assert result.returncode != 0
  assert "unknown AGENT 'dqn'" in result.stderr


# -------------------------------------------------------------------------------------------
# Runs kept apart: a second run is refused, stop_local.sh stops only this checkout's runs.


def _free_port():
  with contextlib.closing(socket.socket()) as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


#: A small V-trace run on CartPole that trains until stopped.
SMALL_RUN = ('gym', 'vtrace', '1')
SMALL_FLAGS = ('--unroll_length=10', '--batch_size=2')


class _Run(object):
  """run_local.sh in the background (its own process group), its output in a file."""

  def __init__(self, tmp_path, name, *args, env=None):
    self.logdir = tmp_path / name
    self.output_path = tmp_path / f'{name}.out'
    environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1')
    environment.update(env or {})
    self._output = open(self.output_path, 'wb')
    self.process = subprocess.Popen(
        ['./run_local.sh', *SMALL_RUN, f'--logdir={self.logdir}', *SMALL_FLAGS, *args],
        cwd=ROOT, env=environment, stdout=self._output, stderr=subprocess.STDOUT,
        start_new_session=True)
    self.pid = self.process.pid

  def output(self):
    return self.output_path.read_text(errors='replace')

  def learner_log(self):
    path = self.logdir / 'logs' / 'learner.log'
    return path.read_text(errors='replace') if path.exists() else ''

  def wait_for_training(self, timeout=180, steps=1):
    deadline = time.time() + timeout
    while self.learner_log().count('Progress:') < steps:
      assert self.process.poll() is None, self.output()[-3000:] + self.learner_log()[-3000:]
      assert time.time() < deadline, f'no training step within {timeout} s'
      time.sleep(0.5)

  def lock(self):
    path = self.logdir / 'run_local.lock'
    if not path.exists():
      return {}
    return dict(line.split('=', 1) for line in path.read_text().splitlines() if '=' in line)

  def close(self):
    """Stops what is left of the run: stop_local.sh, then its process group."""
    if self.process.poll() is None:
      subprocess.run(['./stop_local.sh', f'--logdir={self.logdir}'], cwd=ROOT,
                     capture_output=True, timeout=100)
      try:
        self.process.wait(30)
      except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
      os.killpg(self.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
      self.process.wait(10)
    self._output.close()


@contextlib.contextmanager
def _runs():
  started = []

  def start(*args, **kwargs):
    run = _Run(*args, **kwargs)
    started.append(run)
    return run

  try:
    yield start
  finally:
    for run in started:
      run.close()


def _timed_run_local(*args, env=None):
  start = time.monotonic()
  result = _run_local(*SMALL_RUN, *args, env=env)
  return result, time.monotonic() - start


@pytest.mark.timeout(360)
def test_a_second_run_is_refused_in_seconds_and_the_first_runs_on(tmp_path):
  """The logdir and the learner's address belong to the run that took them; a run beside it
  (its own logdir and address) shows its own learner's error."""
  port = _free_port()
  with _runs() as start:
    first = start(tmp_path, 'first', f'--server_address=localhost:{port}')
    first.wait_for_training()
    lock = first.lock()
    assert lock['owner_pid'] == str(first.pid) and lock['address'] == f'localhost:{port}'
    assert (first.logdir / 'run_local.pids').read_text().startswith('learner ')
    assert not pathlib.Path(f'/tmp/seed_rl/run_local.{first.pid}.pids').exists()

    # The same logdir (another address): refused in one line naming the first run.
    result, same_logdir_s = _timed_run_local(f'--logdir={first.logdir}',
                                             f'--server_address=localhost:{_free_port()}')
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert (f'run_local.sh: the logdir {first.logdir} is in use by another run (run_local.sh '
            f'pid {first.pid}') in result.stderr
    assert '--logdir=DIR' in result.stderr and '--server_address=localhost:' in result.stderr

    # The same address (another logdir): refused, naming the first run's logdir and pid.
    second = tmp_path / 'second'
    result, same_address_s = _timed_run_local(f'--logdir={second}',
                                              f'--server_address=localhost:{port}')
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert (f'the learner address localhost:{port} is taken by the run in {first.logdir} '
            f'(run_local.sh pid {first.pid}') in result.stderr
    assert re.search(r'pick another with --server_address=localhost:\d+ \(free now\)',
                     result.stderr)
    assert not (second / 'logs').exists() and not (second / 'run_local.lock').exists()
    print(f'refused in {same_logdir_s:.1f} s (same logdir), {same_address_s:.1f} s '
          '(same address)')
    assert same_logdir_s < 15 and same_address_s < 15

    # A run beside it whose learner fails shows that learner's own log (Blackjack-v1 passes
    # the flag check, a registered id, and its learner refuses its Tuple observations).
    third = tmp_path / 'third'
    result = _run_local(*SMALL_RUN, f'--logdir={third}', f'--server_address=localhost:'
                        f'{_free_port()}', '--env_name=Blackjack-v1', timeout=200)
    assert result.returncode != 0
    assert f'last lines of its log ({third}/logs/learner.log)' in result.stderr
    assert 'Blackjack-v1: only Box observation spaces are supported' in result.stderr
    assert not (third / 'run_local.lock').exists()

    # The first run was not disturbed: still training, its logs where they were.
    steps = first.learner_log().count('Progress:')
    first.wait_for_training(steps=steps + 3)
    assert [p.name for p in (first.logdir / 'logs').iterdir() if p.is_dir()] == []
    assert 'previous run' not in first.output()
    assert 'Blackjack' not in first.learner_log()
    assert first.lock()['run_id'] == lock['run_id']

    stop = subprocess.run(['./stop_local.sh', f'--logdir={first.logdir}'], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert first.process.wait(60) == 0, first.output()[-3000:]
    assert 'training finished' in first.output()
    assert not (first.logdir / 'run_local.lock').exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize('flag, message', [
    ('--env_nam=CartPole-v1', 'run_local.sh: unknown flag --env_nam=CartPole-v1 (did you mean '
                              '--env_name?) of seed_rl.environments.gym.vtrace_main\n'),
    # An unknown Gymnasium id, which the learner would find 20 s or more later.
    ('--env_name=CartPol-v1', 'run_local.sh: unknown --env_name=CartPol-v1 (did you mean '
                              'CartPole-v1 or '),
])
def test_a_mistyped_flag_fails_in_under_5_seconds(flag, message, tmp_path):
  logdir = tmp_path / 'logdir'
  _timed_run_local(f'--logdir={logdir}', flag)  # Warms the file cache.
  result, elapsed = _timed_run_local(f'--logdir={logdir}', flag)
  print(f'mistyped flag refused in {elapsed:.2f} s')
  assert result.returncode == 2
  assert result.stderr.startswith(message)
  assert result.stderr.count('\n') == 1, result.stderr
  assert elapsed < 5, f'{elapsed:.1f} s'
  assert not logdir.exists()  # Nothing started, nothing written.


@pytest.mark.timeout(360)
def test_stop_local_stops_the_runs_of_this_checkout_only(tmp_path):
  """A run recorded in another registry (another checkout, another user) is left alone."""
  ours_registry, foreign_registry = tmp_path / 'ours_registry', tmp_path / 'foreign_registry'
  with _runs() as start:
    foreign = start(tmp_path, 'foreign', f'--server_address=localhost:{_free_port()}',
                    env={'SEED_RL_RUN_REGISTRY': str(foreign_registry)})
    ours = start(tmp_path, 'ours', f'--server_address=localhost:{_free_port()}',
                 env={'SEED_RL_RUN_REGISTRY': str(ours_registry)})
    foreign.wait_for_training(timeout=240)
    ours.wait_for_training(timeout=240)
    assert [p.name for p in ours_registry.iterdir()] == [ours.lock()['run_id']]
    foreign_pids = (foreign.logdir / 'run_local.pids').read_text()

    ours_env = dict(os.environ, SEED_RL_RUN_REGISTRY=str(ours_registry))
    stop = subprocess.run(['./stop_local.sh'], cwd=ROOT, capture_output=True, text=True,
                          timeout=150, env=ours_env)
    assert stop.returncode == 0, stop.stderr
    assert f'stopping the run recorded in {ours.logdir}/run_local.pids' in stop.stdout
    assert str(foreign.logdir) not in stop.stdout + stop.stderr
    assert ours.process.wait(60) == 0, ours.output()[-3000:]
    assert list(ours_registry.iterdir()) == []

    # The foreign run trains on, its records intact.
    assert foreign.process.poll() is None
    for line in foreign_pids.splitlines():
      name, pid, _ = line.split()
      assert os.path.exists(f'/proc/{pid}'), f'{name} {pid} of the foreign run was stopped'
    steps = foreign.learner_log().count('Progress:')
    foreign.wait_for_training(steps=steps + 2)
    assert foreign.lock()['owner_pid'] == str(foreign.pid)
    assert len(list(foreign_registry.iterdir())) == 1

    # Nothing left to stop for this checkout.
    again = subprocess.run(['./stop_local.sh'], cwd=ROOT, capture_output=True, text=True,
                           timeout=60, env=ours_env)
    assert 'nothing to stop' in again.stdout
    assert foreign.process.poll() is None


def _wait_for(condition, timeout, message):
  """Polls `condition()` until it is true; fails with `message()` after `timeout` seconds."""
  deadline = time.time() + timeout
  while not condition():
    assert time.time() < deadline, message()
    time.sleep(0.5)


@pytest.mark.timeout(480)
@pytest.mark.skipif(not (shutil.which('tmux') and shutil.which('script')),
                    reason='needs tmux and script (util-linux) for a terminal')
def test_tmux_runs_have_sessions_of_their_own(tmp_path):
  """Two interactive runs (tmux mode, in a pseudo-terminal) get a session each, with a progress
  window, and write the same logs as in background mode; stopping one (the learner checkpoints,
  its SIGTERM going through the pipe to its log) leaves the other, and takes seconds."""
  environment = dict(os.environ, TMUX_TMPDIR=str(tmp_path), SEED_RL_NO_TENSORBOARD='1')
  environment.pop('SEED_RL_NO_TMUX', None)
  environment.pop('TMUX', None)

  def tmux(*args):
    return subprocess.run(['tmux', *args], env=environment, capture_output=True, text=True,
                          timeout=20)

  def log(logdir, name):
    path = logdir / 'logs' / f'{name}.log'
    return path.read_text(errors='replace') if path.exists() else ''

  def window(session, name):  # What the window shows, its wrapped lines joined.
    return tmux('capture-pane', '-p', '-J', '-t', f'={session}:{name}').stdout

  def left(logdir):  # The processes of the run still there (learner, actor, tee, monitor).
    return subprocess.run(['pgrep', '-af', '--', f'{logdir}( |/|$)'], capture_output=True,
                          text=True).stdout

  def timed_stop(*args):
    start = time.monotonic()
    stop = subprocess.run(['./stop_local.sh', *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)
    return stop, time.monotonic() - start

  clients, logdirs = [], [tmp_path / 'one', tmp_path / 'two']
  try:
    for logdir in logdirs:
      command = ' '.join(['./run_local.sh', *SMALL_RUN, f'--logdir={logdir}',
                          f'--server_address=localhost:{_free_port()}', *SMALL_FLAGS])
      clients.append(subprocess.Popen(['script', '-qec', command, '/dev/null'], cwd=ROOT,
                                      env=environment, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
    sessions = []
    for logdir in logdirs:
      _wait_for((logdir / 'run_local.lock').exists, 60, lambda: f'no lock in {logdir}')
      lock = dict(line.split('=', 1) for line in
                  (logdir / 'run_local.lock').read_text().splitlines())
      sessions.append(lock['tmux_session'])
      assert lock['tmux_session'].startswith(f'seed_rl_{logdir.name}_')
      _wait_for(lambda: lock['run_id'] in tmux('show-options', '-t', f'={lock["tmux_session"]}:',
                                                '-qv', '@seed_rl_run_id').stdout,
                60, lambda: tmux('ls').stdout)
    assert sessions[0] != sessions[1]
    listed = tmux('list-sessions', '-F', '#{session_name}').stdout.split()
    assert sorted(listed) == sorted(sessions)
    # run_local.sh opens the windows one by one after the session (and its options).
    def windows():
      return tmux('list-windows', '-t', f'={sessions[0]}', '-F', '#{window_name}').stdout.split()

    _wait_for(lambda: len(windows()) >= 4, 30, windows)
    assert windows() == ['main', 'progress', 'learner', 'actor_0']

    # Every process writes its log as in background mode while its window shows its output, and
    # the progress window shows the progress line read from the learner's log.
    for logdir, session in zip(logdirs, sessions):
      _wait_for(lambda: 'Progress:' in log(logdir, 'learner'), 240,
                lambda: f'no training step in {logdir}/logs/learner.log within 240 s:\n'
                        + window(session, 'learner')[-2000:])
      _wait_for(lambda: 'connected' in log(logdir, 'actor_0'), 30,
                lambda: log(logdir, 'actor_0')[-2000:] + window(session, 'actor_0')[-2000:])
    _wait_for(lambda: re.search(r'frames [\d,]+/[\d,]+ \(', window(sessions[0], 'progress')), 30,
              lambda: window(sessions[0], 'progress'))
    assert 'Progress:' in window(sessions[0], 'learner')
    assert 'connected' in window(sessions[0], 'actor_0')
    assert sorted(p.name for p in (logdirs[0] / 'logs').iterdir()) == ['actor_0.log',
                                                                       'learner.log']

    running = left(logdirs[0])
    for process in ('--run_mode=learner', '--run_mode=actor', 'progress_monitor',
                    f'tee {logdirs[0]}/logs/learner.log', f'tee {logdirs[0]}/logs/actor_0.log'):
      assert process in running, running

    stop, stop_s = timed_stop(f'--logdir={logdirs[0]}')
    print(f'stop_local.sh --logdir stopped a training tmux run in {stop_s:.1f} s')
    assert stop.returncode == 0, stop.stderr
    assert f'stopping tmux session {sessions[0]}' in stop.stdout
    assert tmux('list-sessions', '-F', '#{session_name}').stdout.split() == [sessions[1]]
    assert not (logdirs[0] / 'run_local.lock').exists()
    assert (logdirs[1] / 'run_local.lock').exists()
    # SIGTERM reached the learner through the pipe to its log: it checkpointed, and its last
    # lines are in the log.
    learner_log = log(logdirs[0], 'learner')
    assert 'Signal 15 received' in learner_log
    assert re.search(r'Saving checkpoint and SavedModel at iteration [1-9]', learner_log)
    assert 'Training finished' in learner_log, learner_log[-3000:]
    _wait_for(lambda: not left(logdirs[0]), 10, lambda: left(logdirs[0]))
    # The learner's checkpoint takes seconds here; 60 s would be its deadline passing.
    assert stop_s < 45, stop.stdout + stop.stderr

    # The other one is this checkout's too: stop_local.sh without arguments stops it.
    stop, stop_s = timed_stop()
    print(f'stop_local.sh stopped the other training tmux run in {stop_s:.1f} s')
    assert f'stopping tmux session {sessions[1]}' in stop.stdout, stop.stdout + stop.stderr
    assert tmux('list-sessions').returncode != 0  # No session left (and no server).
    assert 'Training finished' in log(logdirs[1], 'learner')
    _wait_for(lambda: not left(logdirs[1]), 10, lambda: left(logdirs[1]))
    assert stop_s < 45, stop.stdout + stop.stderr
  finally:
    tmux('kill-server')
    for client in clients:
      with contextlib.suppress(ProcessLookupError):
        os.killpg(client.pid, signal.SIGKILL)
      client.wait(10)


# -------------------------------------------------------------------------------------------
# Transports: without --server_address the run's actors use shared memory, and the learner
# serves its gRPC address beside it; nothing of it is left after stop_local.sh or a kill -9.


def _dev_shm():
  return set(os.listdir('/dev/shm'))


def _wait_gone(run, timeout=100):
  deadline = time.time() + timeout
  while subprocess.run(['pgrep', '-f', '--', f'--logdir={run.logdir}'],
                       capture_output=True).stdout:
    assert time.time() < deadline, f'processes of {run.logdir} still run'
    time.sleep(0.5)


def _default_grpc_port_free():
  """Can a run take localhost:8686 now (free, and not reserved by another live run)?"""
  return (local_run.tcp_port_free('localhost', 8686) and
          not local_run.reservation_holder(local_run.runtime_dir(), 'tcp-8686'))


@pytest.mark.timeout(360)
def test_a_default_run_serves_its_actors_shared_memory_and_grpc_beside_it(tmp_path):
  """No --server_address: the learner serves the entry point's default gRPC address (which this
  test cannot choose: it runs only where localhost:8686 is free) and shm:<logdir>_<hash>, and
  run_local.sh's actors use the latter; SEED_RL_LOCAL_TRANSPORT=grpc gives them the former."""
  if not _default_grpc_port_free():
    pytest.skip('localhost:8686, the default learner address, is in use or reserved by a run')
  with _runs() as start:
    run = start(tmp_path, 'default')
    run.wait_for_training()
    name = run.lock()['address'].split(',')[1]
    assert run.lock()['address'] == f'localhost:8686,{name}'
    assert re.fullmatch(r'shm:default_[0-9a-f]{12}', name), name
    assert f'learner on localhost:8686,{name}; actors connect to {name}' in run.output()
    actor_log = (run.logdir / 'logs' / 'actor_0.log').read_text()
    assert f'Actor 0 connected to {name}' in actor_log
    assert processes.shm_sockets(name) >= 2  # Listening, and one actor's connection at least.
    subprocess.run(['./stop_local.sh', f'--logdir={run.logdir}'], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    _wait_gone(run)
    assert processes.shm_sockets(name) == 0

    grpc_run = start(tmp_path, 'grpc', env=dict(SEED_RL_LOCAL_TRANSPORT='grpc'))
    grpc_run.wait_for_training()
    assert 'learner on localhost:8686; actors connect to localhost:8686' in grpc_run.output()
    assert 'Actor 0 connected to localhost:8686' in (
        grpc_run.logdir / 'logs' / 'actor_0.log').read_text()
    grpc_name = local_run.shm_name(str(grpc_run.logdir))
    assert processes.shm_sockets(grpc_name) == 0


@pytest.mark.timeout(60)
def test_an_unknown_local_transport_is_refused_in_one_line():
  result = _run_local(*SMALL_RUN, env=dict(SEED_RL_LOCAL_TRANSPORT='tcp'))
  assert result.returncode == 1
  assert result.stderr.strip() == ("run_local.sh: SEED_RL_LOCAL_TRANSPORT must be shm (the "
                                   "actors use shared memory) or grpc, got 'tcp'")


@pytest.mark.timeout(360)
def test_a_shared_memory_run_leaves_nothing_after_stop_local_or_kill_9(tmp_path):
  """A learner listing a gRPC and a shm: address (its actors pick shm:): after stop_local.sh,
  and after kill -9 of the whole run, nothing of it is left in /dev/shm (its segments are
  memfds) nor among the machine's sockets (its name is abstract), and the next stop_local.sh
  releases the killed run's records."""
  before = _dev_shm()
  name = f'shm:leak_{os.getpid()}'
  address = f'--server_address=localhost:{_free_port()},{name}'
  with _runs() as start:
    run = start(tmp_path, 'stopped', address)
    run.wait_for_training()
    assert f'Actor 0 connected to {name}' in (run.logdir / 'logs' / 'actor_0.log').read_text()
    assert processes.shm_sockets(name) >= 2
    subprocess.run(['./stop_local.sh', f'--logdir={run.logdir}'], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    _wait_gone(run)
    assert processes.shm_sockets(name) == 0 and _dev_shm() - before == set()

    killed = start(tmp_path, 'killed', address)
    killed.wait_for_training()
    os.killpg(killed.pid, signal.SIGKILL)
    killed.process.wait(30)
    _wait_gone(killed)
    assert _dev_shm() - before == set()
    # A killed process's sockets close as it finishes exiting, a moment after its command line
    # (which _wait_gone looks for) is gone.
    processes.wait_until(lambda: processes.shm_sockets(name) == 0, 30.)
    stopped = subprocess.run(['./stop_local.sh'], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert not (killed.logdir / 'run_local.lock').exists()
