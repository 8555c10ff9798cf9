"""Tests of run_local.sh and stop_local.sh: argument checks, a real run, stopping a run."""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


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
    (['gym', 'ppo', '2'], "unknown AGENT 'ppo'"),
    (['mujoco', 'ppo', '2'], "unknown AGENT 'ppo'"),
    (['gym', 'sac', '2'], 'gym sac is not available yet'),
    (['gym', 'vtrace', '02'], "NUM_ACTORS must be a non-negative integer, got '02'"),
    (['gym', 'vtrace', '-1'], 'NUM_ACTORS must be a non-negative integer'),
    (['gym', 'vtrace', 'two'], 'NUM_ACTORS must be a non-negative integer'),
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


@pytest.mark.timeout(240)
def test_run_local_gym_vtrace_trains_and_stops_cleanly(tmp_path):
  logdir = tmp_path / 'logdir'
  result = _run_local('gym', 'vtrace', '2', f'--logdir={logdir}',
                      f'--server_address=unix:{tmp_path}/learner.sock',
                      '--unroll_length=10', '--batch_size=4', '--total_environment_frames=2000',
                      timeout=220)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  assert 'training finished' in result.stdout
  learner_log = (logdir / 'logs' / 'learner.log').read_text()
  assert re.search(r'Progress: \d+/2000 environment frames', learner_log)
  assert 'Training finished at iteration 50' in learner_log
  for task in (0, 1):
    assert 'connected' in (logdir / 'logs' / f'actor_{task}.log').read_text()
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
  kept = [p for p in (logdir / 'logs').iterdir() if p.is_dir()]
  assert len(kept) == 1 and f'the previous run\'s logs are in {kept[0]}' in again.stdout
  assert (kept[0] / 'learner.log').read_text() == learner_log
  assert len((logdir / 'runs.jsonl').read_text().splitlines()) == 2


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
      start_new_session=True)
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
    assert 'Signal 15 received' in log
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
@pytest.mark.parametrize('agent, flags, iterations', [
    ('vtrace', ['--unroll_length=10', '--batch_size=2'], 10),
    ('sac', ['--batch_size=8', '--replay_ratio=2', '--mlp_size=16'], 50),
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
  result = _run_local('--docker', 'gym', 'ppo', '2', env={'DOCKER_HOST': 'unix:///nonexistent'})
  assert result.returncode != 0
  assert "unknown AGENT 'ppo'" in result.stderr
