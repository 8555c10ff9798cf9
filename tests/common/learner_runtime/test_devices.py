"""Tests of utils.init_learner: one CPU device, and all devices through MirroredStrategy."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf

from seed_rl.common import utils

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.timeout(60)
def test_single_cpu_learner_uses_one_device_strategy():
  settings = utils.init_learner(num_training_tpus=1)
  assert isinstance(settings.strategy, tf.distribute.OneDeviceStrategy)
  assert settings.training_strategy is settings.strategy
  assert settings.inference_devices == ['/device:CPU:0']
  x = tf.constant([1, 2])
  assert settings.encode(x) is x and settings.decode(x) is x


@pytest.mark.timeout(120)
def test_several_devices_get_a_mirrored_strategy_and_one_inference_device_each():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', CUDA_VISIBLE_DEVICES='')
  process = subprocess.run(
      [sys.executable,
       str(ROOT / 'tests' / 'common' / 'learner_runtime' / 'multi_device_learner.py')],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=100)
  assert process.returncode == 0, process.stderr[-3000:]
  result = json.loads(process.stdout.strip().splitlines()[-1])
  assert result['strategy'] == 'MirroredStrategy'
  assert result['num_replicas'] == 2
  assert result['inference_devices'] == ['/device:CPU:0', '/device:CPU:1']
  # Inference ran on each device with the mirrored weight.
  assert [device[-5:] for device, _ in result['inference_results']] == ['CPU:0', 'CPU:1']
  assert [value for _, value in result['inference_results']] == [2.0, 2.0]
  assert result['replica_ids'] == [0, 1]
  # Gradients 1 and 2 of the two replicas were summed: 1 - 0.1 * 3 on every copy.
  assert result['weight_per_replica'] == pytest.approx([0.7, 0.7])
