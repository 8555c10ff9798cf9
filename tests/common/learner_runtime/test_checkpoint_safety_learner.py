"""A real learner process whose checkpoints cannot be read stops and names them, or, with
--fresh_start, moves them aside and starts: no restart deletes a checkpoint."""

import pathlib
import signal

import pytest
import tensorflow as tf

from tests.processes import Processes

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'


def _learner_flags(tmp_path, *extra):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=4, env_batch_size=4, inference_batch_size=4, unroll_length=10,
                batch_size=4, save_checkpoint_secs=10**5, run_mode='learner')
  return [f'--{name}={value}' for name, value in values.items()] + list(extra)


def _run_until_saved(processes, name, flags):
  """Starts a learner (without actors), waits for its first checkpoint and stops it."""
  learner = processes.start(name, GYM_MAIN, flags)
  learner.wait_for('Saving checkpoint and SavedModel at iteration 0', timeout=120)
  learner.signal(signal.SIGTERM)
  assert learner.wait(60) == 0, learner.log()[-3000:]
  return learner


def _checkpoint_files(logdir: pathlib.Path):
  return {path.name: path.read_bytes() for path in logdir.iterdir()
          if path.name.startswith('ckpt-') or path.name == 'checkpoint'}


@pytest.mark.timeout(420)
def test_a_learner_never_starts_over_on_unreadable_checkpoints(tmp_path):
  logdir = tmp_path / 'logdir'
  with Processes(tmp_path) as processes:
    _run_until_saved(processes, 'learner_1', _learner_flags(tmp_path))
    [data] = logdir.glob('ckpt-0.data-*')
    with open(data, 'r+b') as f:  # A copy cut short.
      f.truncate(4)
    damaged = _checkpoint_files(logdir)
    assert set(damaged) == {'checkpoint', 'ckpt-0.index', data.name}

    refused = processes.start('learner_2', GYM_MAIN, _learner_flags(tmp_path))
    assert refused.wait(120) == 1, refused.log()[-3000:]
    last_line = refused.log().rstrip().splitlines()[-1]
    assert last_line.startswith('seed_rl learner: No checkpoint in the logdir can be restored: '
                                f'{logdir}/ckpt-0: '), last_line
    for words in ('ckpt-0.index', data.name, f'checkpoint in {logdir}', '--fresh_start',
                  'move them out of the logdir yourself'):
      assert words in last_line, last_line
    assert _checkpoint_files(logdir) == damaged

    _run_until_saved(processes, 'learner_3', _learner_flags(tmp_path, '--fresh_start'))
    [moved] = logdir.glob('unreadable_checkpoints_*')
    assert _checkpoint_files(moved) == damaged  # Every file, byte for byte.
    path = tf.train.latest_checkpoint(str(logdir))
    assert path == f'{logdir}/ckpt-0'
    assert tf.train.load_checkpoint(path).get_variable_to_shape_map()
