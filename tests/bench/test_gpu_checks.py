"""bench/gpu_checks.sh on a machine without a GPU: it refuses at once, naming why. (Its parts
run here on the CPU: bench/two_device_learner.py in tests/agents/vtrace/test_end_to_end.py,
bench/jit_compile.py and bench/end_to_end.py in their own tests.)"""

import pathlib
import subprocess

import pytest
import tensorflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
@pytest.mark.skipif(bool(tf.config.list_physical_devices('GPU')), reason='this machine has a GPU')
def test_without_a_gpu_the_checks_refuse_before_running_anything():
  result = subprocess.run([str(ROOT / 'bench' / 'gpu_checks.sh')], cwd=ROOT, capture_output=True,
                          text=True, timeout=590, check=False)
  assert result.returncode == 1
  assert 'gpu_checks: TensorFlow' in result.stderr and 'sees no GPU' in result.stderr
  assert not (ROOT / 'gpu_checks').exists()
