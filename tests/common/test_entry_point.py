"""The learner's start-up says only what matters: TensorFlow's noise is silenced by default."""

import os
import subprocess
import sys

import pytest

from seed_rl.common import entry_point
from tests.processes import ROOT

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'
NOISE = ('failed call to cuInit', 'oneDNN custom operations', 'rebuild TensorFlow',
         'absl::InitializeLog')


def _failing_learner(tmp_path, **environment):
  """A learner that imports TensorFlow, finds its devices and stops on a missing env."""
  env = {k: v for k, v in os.environ.items() if k != 'TF_CPP_MIN_LOG_LEVEL'}
  env.update(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES='', **environment)
  return subprocess.run(
      [sys.executable, '-m', GYM_MAIN, '--run_mode=learner', '--env_name=NoSuchEnv-v0',
       f'--logdir={tmp_path}', '--num_envs=1', f'--server_address=unix:{tmp_path}/l.sock'],
      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110)


@pytest.mark.timeout(240)
def test_tensorflow_noise_is_silenced_unless_asked_for(tmp_path):
  quiet = _failing_learner(tmp_path)
  assert quiet.returncode == 1
  assert 'Learner uses 1 CPU device(s)' in quiet.stderr
  assert quiet.stderr.rstrip().splitlines()[-1].startswith(
      "seed_rl learner: Cannot create Gymnasium environment 'NoSuchEnv-v0'")
  assert not [line for line in quiet.stderr.splitlines() if any(n in line for n in NOISE)]
  # TF_CPP_MIN_LOG_LEVEL=0 keeps every line TensorFlow prints.
  loud = _failing_learner(tmp_path, TF_CPP_MIN_LOG_LEVEL='0')
  assert loud.returncode == 1
  assert any(n in loud.stderr for n in NOISE), loud.stderr[-2000:]


def test_quiet_lines_are_noise_only_where_they_signal_nothing():
  cu_init = 'E0000 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error'
  assert entry_point.is_quiet_line(cu_init, has_gpu=False)
  assert not entry_point.is_quiet_line(cu_init, has_gpu=True)  # A broken GPU must be seen.
  assert entry_point.is_quiet_line('I0000 cpu_feature_guard.cc:210] This TensorFlow binary is '
                                   'optimized to use available CPU instructions', has_gpu=True)
  assert not entry_point.is_quiet_line('E0000 something else failed', has_gpu=False)



# A learner whose loop returns at once, run from a script that goes on after `run`.
_LEARNER_THEN_MORE = """
import atexit, gc, types
from seed_rl.common import common_flags, entry_point
entry_point.FLAGS(['learner', '--run_mode=learner'])
# Registered before `run` registers anything, so it runs last: atexit runs the latest first.
atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))
entry_point._import_learner_quietly = lambda name: types.SimpleNamespace(
    learner_loop=lambda *args: None)
entry_point.run(['learner'], None, 'learner', None, None)
print('frozen after run:', gc.get_freeze_count())
"""


@pytest.mark.timeout(60)
def test_the_learner_freezes_the_heap_only_when_the_process_exits():
  """Whatever the caller of `run` does next (evaluate, a notebook's next cell) has its garbage
  collected as usual; only the interpreter's exit skips collecting TensorFlow's objects."""
  result = subprocess.run([sys.executable, '-c', _LEARNER_THEN_MORE], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=50)
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines() == ['frozen after run: 0', 'frozen at exit: True']


# An entry point's learner, its learner module replaced by one that prints the config it gets.
_CONFIG_OF_MAIN = """
import sys, types
from seed_rl.common import entry_point
from seed_rl.environments.gym import vtrace_main
entry_point.FLAGS(['main', '--run_mode=learner', '--batch_size=3'])
entry_point._import_learner_quietly = lambda name: types.SimpleNamespace(
    learner_loop=lambda *args, config: print(type(config).__name__, config.batch_size,
                                             config.unroll_length, config.discounting))
vtrace_main.main(['main'])
"""


@pytest.mark.timeout(60)
def test_an_entry_point_hands_its_learner_one_typed_config():
  result = subprocess.run([sys.executable, '-c', _CONFIG_OF_MAIN], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=50)
  assert result.returncode == 0, result.stderr[-2000:]
  # The flag given, the entry point's own default (10) and V-trace's (0.99).
  assert result.stdout.split() == ['VTraceConfig', '3', '10', '0.99']
