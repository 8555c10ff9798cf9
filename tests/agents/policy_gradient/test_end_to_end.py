"""PPO end to end: a real learner and real actors over gRPC, learning on a frame budget."""

import time

import numpy as np
import pytest

from seed_rl import evaluate
from tests.processes import Processes, episode_returns, frames_progress

GYM_MAIN = 'seed_rl.environments.gym.ppo_main'
MUJOCO_MAIN = 'seed_rl.environments.mujoco.ppo_main'


def _flags(tmp_path, **values):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                save_checkpoint_secs=10**5, seed=1, **values)
  return [f'--{name}={value}' for name, value in values.items()]


def _start(processes, module, flags, num_actors):
  learner = processes.start('learner', module, flags + ['--run_mode=learner'])
  for task in range(num_actors):
    processes.start(f'actor_{task}', module, flags + ['--run_mode=actor', f'--task={task}'])
  return learner


def _assert_learns(tmp_path, module, threshold, budget, num_actors, env_batch_size, **flags):
  """The mean return of the last 20 episodes reaches `threshold` within `budget` frames, with
  the entry point's defaults (ppo.gin) and a fixed seed."""
  num_envs = num_actors * env_batch_size
  flags = _flags(tmp_path, num_envs=num_envs, env_batch_size=env_batch_size,
                 inference_batch_size=num_envs, total_environment_frames=budget, **flags)
  with Processes(tmp_path) as processes:
    learner = _start(processes, module, flags, num_actors)
    while True:
      returns = episode_returns(learner, 'training')
      frames = frames_progress(learner)
      if len(returns) >= 20 and np.mean(returns[-20:]) >= threshold:
        break
      if learner.popen.poll() is not None:
        pytest.fail(f'no mean return of {threshold} over 20 episodes within {budget} frames; '
                    f'last 20: {returns[-20:]}; log tail:\n{learner.log()[-2000:]}')
      time.sleep(1)
    # Returns are logged just before the frame count, so `frames` bounds where they ended.
    assert frames <= budget


@pytest.mark.timeout(420)
def test_ppo_learns_cartpole_within_300k_frames(tmp_path):
  _assert_learns(tmp_path, GYM_MAIN, 450, 300000, num_actors=2, env_batch_size=8,
                 env_name='CartPole-v1')


@pytest.mark.timeout(420)
def test_ppo_learns_inverted_pendulum_within_300k_frames(tmp_path):
  _assert_learns(tmp_path, MUJOCO_MAIN, 900, 300000, num_actors=2, env_batch_size=16,
                 env_name='InvertedPendulum-v5')


@pytest.mark.timeout(300)
def test_restarted_learner_resumes_its_iterations_records_its_configuration_and_exports(
    tmp_path):
  # Steps of 4 unrolls of 16 steps, 2 epochs of 2 minibatches: 64 frames per iteration.
  flags = _flags(tmp_path, num_envs=4, env_batch_size=4, inference_batch_size=4,
                 unroll_length=16, batch_size=2, batch_size_transitions=0,
                 step_size_transitions=0, batches_per_step=2, epochs_per_step=2,
                 total_environment_frames=640, gin_bindings='ppo.epsilon=0.3')
  with Processes(tmp_path) as processes:
    learner = _start(processes, GYM_MAIN, flags, num_actors=1)
    learner.wait_for(r'Training finished at iteration 10 \(640 environment frames\)',
                     timeout=240)
    assert learner.wait(60) == 0
  logdir = tmp_path / 'logdir'
  operative = (logdir / 'learner.gin').read_text()
  assert 'ppo.epsilon = 0.3' in operative and 'GAE.lambda_ = 0.95' in operative
  assert '--epochs_per_step=2' in (logdir / 'learner_flags.txt').read_text()
  with Processes(tmp_path) as processes:
    again = processes.start('learner_again', GYM_MAIN, flags + ['--run_mode=learner'])
    again.wait_for(r'Training already finished at 640 environment frames \(iteration 10',
                   timeout=120)
    assert again.wait(60) == 0
  # The exported policy plays the environment, greedy (the categorical's mode) or sampling.
  for greedy in (True, False):
    result = evaluate.evaluate(str(logdir), episodes=1, greedy=greedy, seed=1)
    assert result['agent'] == 'POLICY_GRADIENT' and result['env'] == 'CartPole-v1'
    assert result['lengths'][0] >= 8
