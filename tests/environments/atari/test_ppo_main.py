"""The Atari PPO entry point: its defaults, TensorFlow-free actors, and a tiny real run on Pong.

Runs in fresh processes: absl's flags are global to a process, and the Atari entry points
define some of the same ones (`--stack_size`).
"""

import re

import pytest

from tests.processes import Processes, import_without_tensorflow

MAIN = 'seed_rl.environments.atari.ppo_main'


@pytest.mark.timeout(90)
def test_actors_import_no_tensorflow():
  result = import_without_tensorflow([MAIN])
  assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.timeout(300)
@pytest.mark.parametrize('loss_flags, loss_line', [
    # The packaged gin/ppo.gin: PPO's Atari loss.
    ([], 'ppo.epsilon = 0.1'),
    # V-trace's loss in the same agent, through gin bindings.
    (['--gin_bindings=GeneralizedOnPolicyLoss.policy_loss=@vtrace()',
      '--gin_bindings=GeneralizedOnPolicyLoss.advantage_estimator=@VTrace()'],
     'GeneralizedOnPolicyLoss.policy_loss = @vtrace()'),
])
def test_learner_and_actor_train_the_nature_network_on_pong(tmp_path, loss_flags, loss_line):
  # 2 envs, one unroll of 8 steps each per training step (2 minibatches of 1 whole unroll,
  # 4 frames per step): 64 frames per iteration.
  logdir = tmp_path / 'logdir'
  flags = [f'--server_address=unix:{tmp_path}/learner.sock', f'--logdir={logdir}', '--game=Pong',
           '--num_envs=2', '--env_batch_size=2', '--unroll_length=8', '--batch_size=1',
           '--batches_per_step=2', '--epochs_per_step=2', '--stack_size=2',
           '--save_checkpoint_secs=100000', '--total_environment_frames=128'] + loss_flags
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', MAIN, flags + ['--run_mode=learner'])
    actor = processes.start('actor', MAIN, flags + ['--run_mode=actor', '--task=0'])
    assert learner.wait(260) == 0, learner.log()[-3000:]
    log = learner.log()
    assert 'Training finished at iteration 2 (128 environment frames)' in log, log[-3000:]
    assert 'Traceback' not in log
    assert re.search(r'Actor \d connected', actor.log()), actor.log()[-3000:]
    assert 'Traceback' not in actor.log()
  gin_text = (logdir / 'learner.gin').read_text()
  assert loss_line in gin_text
  # The packaged Atari configuration's settings (clipped rewards, Adam's epsilon) stay.
  assert 'GeneralizedOnPolicyLoss.max_abs_reward = 1.0' in gin_text
  assert 'Adam.epsilon = 1e-05' in gin_text
  recorded = (logdir / 'learner_flags.txt').read_text().split()
  assert '--stack_size=2' in recorded
  # The network the learner built and checkpointed: the Nature-DQN torso (32 8x8 kernels on
  # the stacked frames) and its dense layer of 512.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  shapes = [shape for _, shape in tf.train.list_variables(tf.train.latest_checkpoint(str(logdir)))]
  assert [8, 8, 2, 32] in shapes and [3136, 512] in shapes, shapes
