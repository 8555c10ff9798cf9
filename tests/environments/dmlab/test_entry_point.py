"""The DMLab entry point without DeepMind Lab, and the actor side without TensorFlow.

Each check runs in a fresh Python process: what matters is what that process imports, and the
entry point's flags must not meet the other environments' flags (`--game`) in one process.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from tests.environments.dmlab.conftest import FAKE_DIR

ROOT = pathlib.Path(__file__).resolve().parents[3]
MAIN = 'seed_rl.environments.dmlab.vtrace_main'


def _python(code, pythonpath, timeout=60, extra_env=None):
  environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
                     PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath))
  environment.update(extra_env or {})
  return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], cwd=ROOT,
                        env=environment, capture_output=True, text=True, timeout=timeout,
                        check=False)


# Runs the entry point as `python -m` would, then reports whether TensorFlow got imported.
_RUN_MAIN = '''
import runpy, sys
sys.argv = ['vtrace_main'] + {args!r}
try:
  runpy.run_module({main!r}, run_name='__main__', alter_sys=True)
finally:
  print('tensorflow_loaded', 'tensorflow' in sys.modules, file=sys.stderr)
'''


@pytest.fixture(scope='module')
def no_real_deepmind_lab():
  found = _python('import importlib.util; print(importlib.util.find_spec("deepmind_lab"))',
                  [ROOT])
  if found.stdout.strip() != 'None':
    pytest.skip('a real deepmind_lab is installed here')


@pytest.mark.timeout(60)
@pytest.mark.parametrize('run_mode', ['learner', 'actor'])
def test_entry_point_without_deepmind_lab_stops_at_once(tmp_path, no_real_deepmind_lab,
                                                        run_mode):
  args = [f'--run_mode={run_mode}', f'--logdir={tmp_path}/logdir',
          f'--server_address=unix:{tmp_path}/learner.sock']
  result = _python(_RUN_MAIN.format(args=args, main=MAIN), [ROOT])
  assert result.returncode == 1, result.stderr[-3000:]
  assert 'DeepMind Lab (the Python module deepmind_lab) is not installed' in result.stderr
  assert sys.executable in result.stderr
  assert 'docker build -f docker/Dockerfile.dmlab -t seed_rl:dmlab .' in result.stderr
  assert 'bazel build -c opt //python/pip_package:build_pip_package' in result.stderr
  assert 'Traceback' not in result.stderr
  assert 'tensorflow_loaded False' in result.stderr
  # Nothing started: no log directory, no socket.
  assert not (tmp_path / 'logdir').exists()
  assert not (tmp_path / 'learner.sock').exists()


@pytest.mark.timeout(60)
def test_entry_point_with_a_broken_deepmind_lab_says_why(tmp_path):
  broken = tmp_path / 'broken'
  broken.mkdir()
  (broken / 'deepmind_lab.py').write_text(
      "raise ImportError('libOSMesa.so.8: cannot open shared object file')\n")
  result = _python(_RUN_MAIN.format(args=['--run_mode=actor'], main=MAIN), [broken, ROOT])
  assert result.returncode == 1, result.stderr[-3000:]
  assert 'is installed but cannot be imported: libOSMesa.so.8' in result.stderr
  assert 'docker/Dockerfile.dmlab' in result.stderr
  assert 'tensorflow_loaded False' in result.stderr


@pytest.mark.timeout(60)
def test_run_local_dmlab_without_deepmind_lab_stops_before_starting_anything(
    tmp_path, no_real_deepmind_lab):
  environment = dict(os.environ, SEED_RL_NO_TMUX='1', SEED_RL_NO_TENSORBOARD='1')
  environment.pop('PYTHONPATH', None)
  result = subprocess.run(['./run_local.sh', 'dmlab', 'vtrace', '4',
                           f'--logdir={tmp_path}/logdir'],
                          cwd=ROOT, env=environment, capture_output=True, text=True, timeout=50,
                          check=False)
  assert result.returncode != 0
  assert "No module named 'deepmind_lab'" in result.stderr
  assert 'docker build -f docker/Dockerfile.dmlab -t seed_rl:dmlab .' in result.stderr
  assert 'seed_rl: dmlab vtrace' not in result.stdout  # It stopped before starting processes.
  assert not (tmp_path / 'logdir').exists()


@pytest.mark.timeout(60)
def test_actor_side_imports_no_tensorflow(tmp_path):
  """Flags, env creation, stepping and the level cache, as in an actor process."""
  code = f'''
  import sys
  from absl import flags
  from seed_rl.common import env_wrappers
  from seed_rl.environments.dmlab import env
  from seed_rl.environments.dmlab import vtrace_main  # defines the flags
  FLAGS = flags.FLAGS
  FLAGS(['actor', '--run_mode=actor', '--width=32', '--height=24',
         '--level_cache_dir={tmp_path}/cache'])
  assert FLAGS.num_action_repeats == 4, FLAGS.num_action_repeats
  assert FLAGS.game == 'explore_goal_locations_small'
  env.exit_if_deepmind_lab_missing()
  batched = env_wrappers.BatchedEnvironment(env.create_environment, 2, 0, FLAGS)
  observations = batched.reset()
  for _ in range(20):
    observations, rewards, dones, infos = batched.step([0, 6])
    observations = batched.reset_if_done(dones)
  batched.close()
  print('shape', observations.shape, observations.dtype)
  print('modules', sorted(m for m in sys.modules
                          if m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras')
                          or m == 'seed_rl.environments.dmlab.networks'))
  '''
  result = _python(code, [FAKE_DIR, ROOT])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'shape (2, 24, 32, 3) uint8' in result.stdout
  assert 'modules []' in result.stdout
  assert any(files for _, _, files in os.walk(tmp_path / 'cache'))


@pytest.mark.timeout(60)
def test_flag_defaults():
  code = '''
  from absl import flags
  from seed_rl.environments.dmlab import vtrace_main
  FLAGS = flags.FLAGS
  FLAGS(['main'])
  print({name: FLAGS[name].value for name in [
      'homepath', 'dataset_path', 'game', 'width', 'height', 'level_cache_dir',
      'num_action_repeats', 'learning_rate', 'adam_epsilon']})
  '''
  result = _python(code, [ROOT])
  assert result.returncode == 0, result.stderr[-3000:]
  assert eval(result.stdout) == {  # pylint: disable=eval-used
      'homepath': '', 'dataset_path': '', 'game': 'explore_goal_locations_small', 'width': 96,
      'height': 72, 'level_cache_dir': None, 'num_action_repeats': 4,
      'learning_rate': 0.00048, 'adam_epsilon': 3.125e-7}


@pytest.mark.timeout(120)
def test_optimizer_and_network():
  """Adam(beta1=0, epsilon) with the learning rate decaying linearly to 0; ImpalaDeep at 72x96."""
  code = '''
  import numpy as np
  import tensorflow as tf
  from absl import flags
  from seed_rl.agents.vtrace import networks as vtrace_networks
  from seed_rl.common.structures import EnvOutput
  from seed_rl.environments.dmlab import networks
  from seed_rl.environments.dmlab import vtrace_main
  flags.FLAGS(['main', '--learning_rate=0.001', '--adam_epsilon=0.01'])
  optimizer, learning_rate_fn = vtrace_main.create_optimizer(100)
  print('beta_1', float(optimizer.beta_1), 'epsilon', float(optimizer.epsilon))
  print('lr', [round(float(learning_rate_fn(i)), 8) for i in (0, 50, 100)])
  assert networks.ImpalaDeep is vtrace_networks.ImpalaDeep
  import gymnasium
  agent = vtrace_main.create_agent(gymnasium.spaces.Discrete(9), None, None)
  assert isinstance(agent, vtrace_networks.ImpalaDeep)
  env_outputs = EnvOutput(tf.zeros([2]), tf.zeros([2], tf.bool),
                          tf.constant(np.random.randint(0, 256, [2, 72, 96, 3]), tf.uint8),
                          tf.zeros([2], tf.bool), tf.zeros([2], tf.int32))
  outputs, _ = agent(tf.zeros([2], tf.int64), env_outputs, agent.initial_state(2))
  print('logits', outputs.policy_logits.shape, 'action', outputs.action.shape,
        outputs.action.dtype.name, 'variables', len(agent.trainable_variables))
  '''
  result = _python(code, [ROOT], timeout=110)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'beta_1 0.0 epsilon 0.01' in result.stdout
  assert 'lr [0.001, 0.0005, 0.0]' in result.stdout
  assert 'logits (2, 9) action (2,) int64 variables 39' in result.stdout
