"""V-trace end to end: a real learner and real actors over gRPC, as separate processes."""

import re
import shutil
import signal
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.structures import EnvOutput
from tests.processes import Processes, episode_returns, frames_progress

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'
TAGGED_MAIN = 'tests.agents.vtrace.tagged_main'


def _flags(tmp_path, **overrides):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=8, env_batch_size=4, inference_batch_size=4, unroll_length=10,
                batch_size=4, total_environment_frames=10**7, save_checkpoint_secs=10**5,
                seed=1)
  values.update(overrides)
  return [f'--{name}={value}' for name, value in values.items()]


def _actor_flags(flags, task):
  return flags + ['--run_mode=actor', f'--task={task}']


@pytest.mark.timeout(240)
def test_actor_killed_mid_unroll_is_reset_and_training_continues(tmp_path):
  flags = _flags(tmp_path)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', TAGGED_MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', TAGGED_MAIN, _actor_flags(flags, task))
              for task in (0, 1)]
    learner.wait_for(r'needing reset: \[0 1 2 3\]', timeout=90)
    learner.wait_for(r'Progress: \d+/', timeout=60, count=3)
    # Unrolls are 10 steps long: at a random moment the actor is almost surely mid-unroll.
    time.sleep(np.random.uniform(0.2, 1.0))
    actors[0].kill()
    frames_at_kill = frames_progress(learner)
    processes.start('actor_0_restarted', TAGGED_MAIN, _actor_flags(flags, 0))
    learner.wait_for(r'needing reset: \[0 1 2 3\]', timeout=60, count=2)
    # Training goes on; a mixed unroll would have failed the tag check and killed the learner.
    deadline = time.time() + 90
    while frames_progress(learner) < frames_at_kill + 20 * 4 * 10:
      assert learner.popen.poll() is None, learner.log()[-3000:]
      assert time.time() < deadline, 'training did not continue after the actor restart'
      time.sleep(0.5)
    assert 'mixes the steps' not in learner.log()
    assert re.search(r'Progress: \d+/\d+ environment frames \(policy lag \d+\.\d iterations, '
                     r'at most \d+\)', learner.log())
    assert len(re.findall(r'needing reset: \[4 5 6 7\]', learner.log())) == 1
    assert 'Inference call failed' not in actors[1].log()


def _checkpoint_values(logdir):
  path = tf.train.latest_checkpoint(str(logdir))
  reader = tf.train.load_checkpoint(path)
  names = [name for name, _ in tf.train.list_variables(path)
           if not name.startswith('_CHECKPOINTABLE') and 'save_counter' not in name]
  return path, {name: reader.get_tensor(name) for name in names}


@pytest.mark.timeout(300)
def test_learner_restart_restores_checkpoint_and_actors_reconnect(tmp_path):
  flags = _flags(tmp_path, save_checkpoint_secs=2)
  with Processes(tmp_path) as processes:
    first = processes.start('learner_1', GYM_MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', GYM_MAIN, _actor_flags(flags, task))
              for task in (0, 1)]
    first.wait_for(r'Saving checkpoint and SavedModel at iteration [1-9]\d*', timeout=120)
    first.wait_for(r'Saving checkpoint and SavedModel at iteration', timeout=60, count=3)
    first.kill()  # Preemption: no chance to checkpoint.
    saved_path, _ = _checkpoint_values(tmp_path / 'logdir')
    saved_iteration = int(saved_path.rsplit('-', 1)[1])
    assert saved_iteration > 0

    second = processes.start('learner_2', GYM_MAIN, flags + ['--run_mode=learner'])
    second.wait_for(re.escape(f'Restoring checkpoint {saved_path}'), timeout=90)
    for actor in actors:  # The actors were never restarted: they reconnect by themselves.
      actor.wait_for(r'Actor \d connected', timeout=60, count=2)
    frames_per_iteration = 4 * 10
    second.wait_for(r'Progress: \d+/', timeout=60)
    first_progress = frames_progress(second)
    assert first_progress > saved_iteration * frames_per_iteration
    second.signal(signal.SIGTERM)
    assert second.wait(60) == 0, second.log()[-3000:]
    final_path, final_values = _checkpoint_values(tmp_path / 'logdir')
    final_iteration = int(final_path.rsplit('-', 1)[1])
    assert final_iteration > saved_iteration
    # The stop is summed up in one line: frames, what is left of the budget, the checkpoint.
    assert re.search(rf'Training finished at iteration {final_iteration} '
                     rf'\({final_iteration * frames_per_iteration} environment frames\): stopped '
                     rf'with \d+ frames of the budget left; checkpoint {re.escape(final_path)}',
                     second.log()), second.log()[-2000:]

    # A learner stopped by SIGTERM (a preemption) has not finished training: its actors keep
    # waiting for the next one (only a spent budget makes them stop).
    for actor in actors:
      actor.wait_for('Inference call failed', timeout=30)
    time.sleep(1)
    for actor in actors:
      assert actor.popen.poll() is None, actor.log()[-3000:]
      assert 'finished training' not in actor.log()

    # A learner restored without actors and stopped at once re-saves exactly what it restored:
    # weights, optimizer state and step counter (and SIGTERM works while it waits for data).
    for actor in actors:
      actor.kill()
    third = processes.start('learner_3', GYM_MAIN, flags + ['--run_mode=learner'])
    third.wait_for(re.escape(f'Restoring checkpoint {final_path}'), timeout=90)
    third.wait_for('Learner uses', timeout=5)
    time.sleep(2)
    third.signal(signal.SIGTERM)
    assert third.wait(60) == 0, third.log()[-3000:]
    path, values = _checkpoint_values(tmp_path / 'logdir')
    assert path == final_path
    assert values.keys() == final_values.keys()
    for name, value in final_values.items():
      np.testing.assert_array_equal(values[name], value, err_msg=name)

    # Resumed at its budget, a learner says so and stops at once, without waiting for actors,
    # having exported the policy of its latest checkpoint again (a lost saved_model/ is back).
    shutil.rmtree(tmp_path / 'logdir' / 'saved_model')
    budget = final_iteration * frames_per_iteration
    fourth = processes.start('learner_4', GYM_MAIN, flags + [
        '--run_mode=learner', f'--total_environment_frames={budget}'])
    assert fourth.wait(90) == 0, fourth.log()[-3000:]
    assert (f'Training already finished at {budget} environment frames (iteration '
            f'{final_iteration}, checkpoint {final_path}); delete the logdir or raise '
            f'--total_environment_frames (now {budget}) to train more.') in fourth.log()
    assert tf.train.latest_checkpoint(str(tmp_path / 'logdir')) == final_path
    assert (tmp_path / 'logdir' / 'saved_model' / 'saved_model.pb').is_file()


@pytest.mark.timeout(600)
def test_vtrace_learns_cartpole_to_475_within_500k_frames(tmp_path):
  """The gym entry point's defaults, as bench/learn_classic_control.py runs them: a mean return
  of 475 over 20 episodes within the budget. The bench also holds the rest of the full form
  (450 or more over the last 100k frames), which needs the whole budget: with rewards scaled
  by 0.1, 8 seeds of 8 reached 475 at 60k-129k frames and held 497-500 (before the scaling
  they reached 400 at 144k-300k, so this test asserted 400)."""
  flags = _flags(tmp_path, num_envs=16, env_batch_size=8, inference_batch_size=16,
                 total_environment_frames=500000)
  flags = [f for f in flags if not f.startswith(('--unroll_length=', '--batch_size='))]
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', GYM_MAIN, flags + ['--run_mode=learner'])
    for task in (0, 1):
      processes.start(f'actor_{task}', GYM_MAIN, _actor_flags(flags, task))
    while True:
      returns = episode_returns(learner)
      frames = frames_progress(learner)
      if len(returns) >= 20 and np.mean(returns[-20:]) >= 475:
        break
      if learner.popen.poll() is not None:
        pytest.fail(f'no mean return of 475 over 20 episodes within 500k frames; last 20: '
                    f'{returns[-20:]}; log tail:\n{learner.log()[-2000:]}')
      time.sleep(1)
    # Returns are logged just before the frame count, so `frames` bounds where they ended.
    assert frames <= 500000


@pytest.mark.timeout(240)
def test_two_device_learner_serves_tf_free_actors_and_exports_a_saved_model(tmp_path):
  # Training steps of 2 epochs over 2 batches of 2 unrolls (--epochs_per_step=2,
  # --batches_per_step=2), each batch shared by the two devices: the budget, the progress and
  # the checkpointed step counter (mirrored over the devices) count training steps of 4 unrolls,
  # the optimizer counts its own 4 per step. One learner serves both checks, for the suite's time.
  flags = _flags(tmp_path, batch_size=2, total_environment_frames=100 * 4 * 10,
                 epochs_per_step=2, batches_per_step=2)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', 'bench.two_device_learner',
                              flags + ['--run_mode=learner'])
    processes.start('actor_0', GYM_MAIN, _actor_flags(flags, 0))
    checker = processes.start('actor_1', 'tests.agents.vtrace.tf_free_actor',
                              _actor_flags(flags, 1))
    learner.wait_for(r'Learner uses 2 CPU device\(s\)', timeout=60)
    checker.wait_for(r'peak_rss_mb', timeout=150)
    assert 'tensorflow_loaded False' in checker.log()
    peak_rss_mb = float(re.search(r'peak_rss_mb ([\d.]+)', checker.log()).group(1))
    assert peak_rss_mb < 150, f'actor peak RSS {peak_rss_mb} MB'
    processes.start('actor_1_again', GYM_MAIN, _actor_flags(flags, 1))
    assert learner.wait(150) == 0, learner.log()[-3000:]
    assert 'Training finished at iteration 100 (4000 environment frames)' in learner.log()
  _, values = _checkpoint_values(tmp_path / 'logdir')
  [training_iterations] = [v for name, v in values.items() if 'training_iterations' in name]
  [optimizer_steps] = [v for name, v in values.items() if name.startswith('optimizer/_iterations')]
  assert (training_iterations, optimizer_steps) == (100, 400)

  # The exported policy runs without the learner.
  exported = tf.saved_model.load(str(tmp_path / 'logdir' / 'saved_model'))
  state = exported.initial_state(3)
  env_outputs = EnvOutput(tf.zeros([3]), tf.zeros([3], tf.bool), tf.zeros([3, 4]),
                          tf.zeros([3], tf.bool), tf.zeros([3], tf.int32))
  outputs, _ = exported.get_action(tf.zeros([3], tf.int64), env_outputs, state)
  assert outputs[0].shape == [3] and outputs[0].dtype == tf.int64
