"""SAC end to end: a real learner and real actors over gRPC, as separate processes."""

import re
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.structures import EnvOutput
from tests.processes import Processes, episode_returns, frames_progress

SAC_MAIN = 'seed_rl.environments.mujoco.sac_main'


def _flags(tmp_path, **overrides):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=4, env_batch_size=4, inference_batch_size=4, seed=1,
                save_checkpoint_secs=10**5, replay_buffer_size=100000)
  values.update(overrides)
  return [f'--{name}={value}' for name, value in values.items()]


@pytest.mark.timeout(480)
def test_sac_learns_pendulum_within_30k_steps(tmp_path):
  flags = _flags(tmp_path, env_name='Pendulum-v1', total_environment_frames=30000,
                 learning_rate=1e-3, replay_ratio=256, polyak=0.995, mlp_size=64,
                 entropy_cost=0.1, target_entropy=-1)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', SAC_MAIN, flags + ['--run_mode=learner'])
    processes.start('actor_0', SAC_MAIN, flags + ['--run_mode=actor', '--task=0'])
    while True:
      returns = episode_returns(learner)
      frames = frames_progress(learner)
      if len(returns) >= 10 and np.mean(returns[-10:]) >= -250:
        break
      if learner.popen.poll() is not None:
        pytest.fail(f'no mean return of -250 over 10 episodes within 30k steps; last 10: '
                    f'{returns[-10:]}; log tail:\n{learner.log()[-2000:]}')
      time.sleep(1)
    # Returns are logged just before the frame count, so `frames` bounds where they ended.
    assert frames <= 30000


@pytest.mark.timeout(300)
def test_hindsight_replay_with_dict_observations_end_to_end(tmp_path):
  flags = _flags(tmp_path, env_name='bit_flip', her_window_length=4, unroll_length=2,
                 batch_size=16, replay_ratio=2, total_environment_frames=1600, mlp_size=16,
                 save_checkpoint_secs=5)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', SAC_MAIN, flags + ['--run_mode=learner'])
    actor = processes.start('actor_0', SAC_MAIN, flags + ['--run_mode=actor', '--task=0'])
    assert learner.wait(240) == 0, learner.log()[-3000:]
    assert 'Training finished' in learner.log()
    assert re.search(r'Return: -?[\d.]+ Raw return', learner.log())
    assert actor.wait(30) == 0 and 'finished training; this actor stops.' in actor.log()

  exported = tf.saved_model.load(str(tmp_path / 'logdir' / 'saved_model'))
  goal = {key: tf.zeros([2, 10]) for key in ('observation', 'achieved_goal', 'desired_goal')}
  env_outputs = EnvOutput(tf.zeros([2]), tf.zeros([2], tf.bool), goal, tf.zeros([2], tf.bool),
                          tf.zeros([2], tf.int32))
  outputs, _ = exported.get_action(tf.zeros([2], tf.int64), env_outputs, ())
  assert outputs[0].shape == [2] and np.all((outputs[0].numpy() >= 0) & (outputs[0] < 10))
