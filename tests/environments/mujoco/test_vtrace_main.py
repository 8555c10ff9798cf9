"""The MuJoCo V-trace entry point: its flags, TensorFlow-free actors, and short real runs.

Everything runs in fresh processes: the entry point's flags (`--env_name`, `--discretization`)
are also the gym entry point's, and absl flags are global to a process.
"""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.structures import EnvOutput
from tests.processes import ROOT, Processes, episode_returns

MAIN = 'seed_rl.environments.mujoco.vtrace_main'


def _python(code, timeout=60):
  environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=str(ROOT))
  return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], cwd=ROOT,
                        env=environment, capture_output=True, text=True, timeout=timeout,
                        check=False)


@pytest.mark.timeout(60)
def test_flags_have_the_originals_defaults_and_import_no_tensorflow():
  result = _python('''
      import sys
      from absl import flags
      from seed_rl.environments.mujoco import vtrace_main
      flags.FLAGS(['vtrace_main'])
      for name in ['env_name', 'discretization', 'n_actions_per_dim', 'action_ratio',
                   'learning_rate', 'n_mlp_layers', 'mlp_size', 'n_lstm_layers', 'lstm_size',
                   'normalize_observations', 'num_action_repeats']:
        print(name, repr(flags.FLAGS[name].value))
      print('tensorflow_loaded', 'tensorflow' in sys.modules)
      ''')
  assert result.returncode == 0, result.stderr[-3000:]
  values = dict(line.split(' ', 1) for line in result.stdout.splitlines())
  assert values == {
      'env_name': "'HalfCheetah-v5'", 'discretization': "'none'", 'n_actions_per_dim': '11',
      'action_ratio': '30.0', 'learning_rate': '0.0003', 'n_mlp_layers': '2', 'mlp_size': '64',
      'n_lstm_layers': '0', 'lstm_size': '64', 'normalize_observations': 'False',
      'num_action_repeats': '1', 'tensorflow_loaded': 'False'}


@pytest.mark.timeout(120)
def test_agent_is_mlp_and_lstm_behind_the_normalizer():
  result = _python('''
      import gymnasium
      import tensorflow as tf
      from absl import flags
      from seed_rl.common import normalizer, parametric_distribution
      from seed_rl.common.structures import EnvOutput
      from seed_rl.environments.mujoco import vtrace_main
      flags.FLAGS(['vtrace_main', '--normalize_observations', '--n_lstm_layers=1',
                   '--mlp_size=16', '--lstm_size=8'])
      space = gymnasium.spaces.Box(-1., 1., (2,))
      distribution = parametric_distribution.get_parametric_distribution_for_action_space(space)
      agent = vtrace_main.create_agent(space, None, distribution)
      assert isinstance(agent, normalizer.NormalizeObservationsWrapper), agent
      assert type(agent.policy).__name__ == 'MLPandLSTM'
      def env_outputs(*batch):
        return EnvOutput(tf.zeros(batch), tf.zeros(batch, tf.bool),
                         tf.random.normal(batch + (5,), 3., 2.), tf.zeros(batch, tf.bool),
                         tf.zeros(batch, tf.int32))
      # One inference step ([B, ...]) and a training unroll ([T, B, ...]), the learner's calls.
      outputs, state = agent(tf.zeros([3, 2]), env_outputs(3), agent.initial_state(3),
                             unroll=False, is_training=False)
      assert outputs.action.shape == [3, 2] and outputs.baseline.shape == [3]
      assert float(agent.normalizer.steps) == 0
      outputs, _ = agent(tf.zeros([4, 3, 2]), env_outputs(4, 3), agent.initial_state(3),
                         unroll=True, is_training=True)
      assert outputs.policy_logits.shape == [4, 3, 4]
      agent.end_of_training_step_callback()
      assert float(agent.normalizer.steps) == 12
      print('hidden layers', [w.shape for w in agent.trainable_variables][:3])
      optimizer, learning_rate_fn = vtrace_main.create_optimizer(100)
      print('learning rate', float(optimizer.learning_rate), learning_rate_fn(50))
      ''', timeout=110)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'learning rate 0.0003000000142492354 0.0003' in result.stdout


@pytest.mark.timeout(240)
def test_mujoco_actor_imports_no_tensorflow(tmp_path):
  flags = [f'--server_address=unix:{tmp_path}/learner.sock', f'--logdir={tmp_path}/logdir',
           '--env_name=HalfCheetah-v5', '--num_envs=2', '--env_batch_size=2',
           '--unroll_length=10', '--batch_size=2', '--total_environment_frames=100000',
           '--save_checkpoint_secs=100000']
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', MAIN, flags + ['--run_mode=learner'])
    checker = processes.start('actor_0', 'tests.environments.mujoco.tf_free_actor',
                              flags + ['--run_mode=actor', '--task=0'])
    checker.wait_for(r'peak_rss_mb', timeout=200)
    assert 'mujoco_loaded True' in checker.log()
    assert 'tensorflow_loaded False' in checker.log()
    peak_rss_mb = float(re.search(r'peak_rss_mb ([\d.]+)', checker.log()).group(1))
    assert peak_rss_mb < 200, f'actor peak RSS {peak_rss_mb} MB'
    assert learner.popen.poll() is None, learner.log()[-3000:]
    # HalfCheetah's model makes MuJoCo warn; the warning goes to the log (not MUJOCO_LOG.TXT).
    assert 'MuJoCo: compiler attribute' in checker.log()


@pytest.mark.timeout(300)
def test_learner_and_actors_finish_a_tiny_budget_on_pendulum(tmp_path):
  # 800 frames trained: however unevenly the two envs acted them, at least 3 of Pendulum's
  # 200-step episodes ended (with 480, one env could end one and the other none).
  iterations = 20
  frames_per_iteration = 2 * 20  # batch_size x unroll_length (no action repeats)
  flags = [f'--server_address=unix:{tmp_path}/learner.sock', f'--logdir={tmp_path}/logdir',
           '--env_name=Pendulum-v1', '--num_envs=2', '--env_batch_size=1',
           '--unroll_length=20', '--batch_size=2', '--normalize_observations',
           '--n_lstm_layers=1', '--lstm_size=16', '--save_checkpoint_secs=100000',
           f'--total_environment_frames={iterations * frames_per_iteration}', '--seed=3']
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', MAIN,
                              flags + ['--run_mode=actor', f'--task={task}'])
              for task in (0, 1)]
    assert learner.wait(240) == 0, learner.log()[-3000:]
    log = learner.log()
    assert f'Training finished at iteration {iterations}' in log
    assert 'Traceback' not in log
    assert len(episode_returns(learner)) >= 2, log[-3000:]
    for actor in actors:
      assert 'Traceback' not in actor.log()
      assert re.search(r'Actor \d connected', actor.log())

  # The observation statistics were trained and checkpointed with the network.
  path = tf.train.latest_checkpoint(str(tmp_path / 'logdir'))
  reader = tf.train.load_checkpoint(path)
  steps = reader.get_tensor('agent/normalizer/steps/.ATTRIBUTES/VARIABLE_VALUE')
  assert steps == iterations * 2 * 21  # Unrolls of unroll_length + 1 steps.
  mean = reader.get_tensor('agent/normalizer/mean/.ATTRIBUTES/VARIABLE_VALUE')
  assert mean.shape == (3,) and np.all(np.abs(mean[:2]) <= 1)  # cos, sin of the angle.

  # The exported policy runs without the learner, on raw observations, with [-1, 1] actions.
  policy = tf.saved_model.load(str(tmp_path / 'logdir' / 'saved_model'))
  state = policy.initial_state(5)
  env_outputs = EnvOutput(tf.zeros([5]), tf.zeros([5], tf.bool), tf.ones([5, 3]) * 3.,
                          tf.zeros([5], tf.bool), tf.zeros([5], tf.int32))
  outputs, _ = policy.get_action(tf.zeros([5, 1]), env_outputs, state)
  action = outputs[0].numpy()
  assert action.shape == (5, 1) and np.all(np.abs(action) <= 1)
