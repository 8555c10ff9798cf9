"""Tests for seed_rl.common.normalizer."""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import normalizer as normalizer_lib

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Same fields as seed_rl.common.utils.EnvOutput (the learners' calling
# convention); defined here so this test does not depend on utils.
EnvOutput = collections.namedtuple(
    'EnvOutput', 'reward done observation abandoned episode_step')


@pytest.mark.timeout(60)
def test_updates_give_zero_mean_unit_std():
  rng = np.random.default_rng(0)
  means = np.array([1., -3., 10., 0.], np.float32)
  stds = np.array([0.5, 2., 7., 1.], np.float32)
  batches = [(means + stds * rng.normal(size=(8, 16, 4))).astype(np.float32)
             for _ in range(5)]
  normalizer = normalizer_lib.Normalizer(eps=0.)
  for batch in batches:
    normalizer.update(tf.constant(batch))  # [T, B, D]: leading dims flattened
  data = np.concatenate([b.reshape(-1, 4) for b in batches])
  np.testing.assert_allclose(normalizer.steps, 5 * 8 * 16)
  np.testing.assert_allclose(normalizer.mean, data.mean(0), atol=1e-4)
  np.testing.assert_allclose(normalizer.std, data.std(0), atol=1e-4)
  normalized = normalizer(tf.constant(batches[0])).numpy()
  assert normalized.shape == batches[0].shape
  all_normalized = normalizer(tf.constant(data)).numpy()
  np.testing.assert_allclose(all_normalized.mean(0), 0., atol=1e-4)
  np.testing.assert_allclose(all_normalized.std(0), 1., atol=1e-4)


@pytest.mark.timeout(60)
def test_default_eps_and_clipping():
  normalizer = normalizer_lib.Normalizer()
  # Means 1 and 20, stds 1 and 10.
  normalizer.update(tf.constant([[0., 10.], [2., 30.]]))
  out = normalizer(tf.constant([[2., 20.], [100., -100.]])).numpy()
  np.testing.assert_allclose(out[0], [1. / 1.001, 0.], rtol=1e-6)
  np.testing.assert_allclose(out[1], [5., -5.])
  narrow = normalizer_lib.Normalizer(clip_range=(-1, 2))
  narrow.update(tf.constant([[0.], [2.]]))
  np.testing.assert_allclose(narrow(tf.constant([[-50.], [50.]])),
                             [[-1.], [2.]])


@pytest.mark.timeout(60)
def test_only_accumulate_then_finish_and_empty_finish():
  normalizer = normalizer_lib.Normalizer()
  normalizer.build(3)
  normalizer.finish_update()  # No data yet: statistics stay finite.
  np.testing.assert_allclose(normalizer.mean, np.zeros(3))
  np.testing.assert_allclose(normalizer.std, np.ones(3))
  normalizer.update(tf.ones([4, 3]), only_accumulate=True)
  assert normalizer.steps.numpy() == 0
  assert normalizer.steps_acc.numpy() == 4
  normalizer.finish_update()
  assert normalizer.steps.numpy() == 4 and normalizer.steps_acc.numpy() == 0
  np.testing.assert_allclose(normalizer.mean, np.ones(3))
  np.testing.assert_allclose(normalizer.std, np.zeros(3))
  with pytest.raises(ValueError, match='size 3.*size 2'):
    normalizer.update(tf.ones([1, 2]))


@pytest.mark.timeout(60)
def test_get_logs_keys():
  normalizer = normalizer_lib.Normalizer()
  assert normalizer.get_logs() == {}
  normalizer.update(tf.constant([[1., 2., 3.], [3., 2., 1.]]))
  logs = normalizer.get_logs()
  assert sorted(logs) == sorted(
      [f'mean/{i}' for i in range(3)] + [f'std/{i}' for i in range(3)])
  np.testing.assert_allclose([logs[f'mean/{i}'] for i in range(3)], 2.)
  np.testing.assert_allclose([logs[f'std/{i}'] for i in range(3)], [1, 0, 1])


class _EchoPolicy(tf.Module):
  """Minimal agent returning the observation it was given."""

  def __call__(self, prev_actions, env_outputs, core_state, unroll=False,
               is_training=False):
    return env_outputs.observation, core_state

  def get_action(self, *args, **kwargs):
    return self(*args, **kwargs)

  def get_V(self, prev_actions, env_outputs, core_state, unroll=False):
    return env_outputs.observation

  def initial_state(self, batch_size):
    return tf.zeros([batch_size, 1])


@pytest.mark.timeout(60)
def test_normalize_observations_wrapper():
  normalizer = normalizer_lib.Normalizer(eps=0.)
  agent = normalizer_lib.NormalizeObservationsWrapper(_EchoPolicy(), normalizer)
  assert hasattr(agent, 'get_V') and not hasattr(agent, 'get_Q')
  assert agent.initial_state(2).shape == (2, 1)
  rng = np.random.default_rng(1)
  # Unroll [T=3, B=2]: a [2, 2] float leaf, a [1] float leaf, an int leaf.
  obs = {'a': tf.constant(rng.normal(5., 2., (3, 2, 2, 2)), tf.float32),
         'b': tf.constant(rng.normal(-1., 3., (3, 2, 1)), tf.float64),
         'c': tf.constant(rng.integers(0, 9, (3, 2, 4)), tf.int32)}
  zeros = tf.zeros([3, 2])
  env_outputs = EnvOutput(zeros, tf.zeros([3, 2], tf.bool), obs,
                          tf.zeros([3, 2], tf.bool), tf.zeros([3, 2], tf.int32))

  @tf.function
  def train_call(env_outputs):
    out, _ = agent(zeros[0], env_outputs, tf.zeros([2, 1]), unroll=True,
                   is_training=True)
    return out

  train_call(env_outputs)
  assert normalizer.steps.numpy() == 0  # Only accumulated so far.
  assert normalizer.steps_acc.numpy() == 6
  agent.end_of_training_step_callback()
  assert normalizer.steps.numpy() == 6

  out = train_call(env_outputs)
  agent.end_of_training_step_callback()
  assert out['b'].dtype == tf.float64 and out['c'].dtype == tf.int32
  np.testing.assert_array_equal(out['c'], obs['c'])
  flat = np.concatenate([out['a'].numpy().reshape(6, 4),
                         out['b'].numpy().reshape(6, 1)], axis=-1)
  np.testing.assert_allclose(flat.mean(0), 0., atol=1e-5)
  np.testing.assert_allclose(flat.std(0), 1., atol=1e-4)

  # Inference calls ([B] only) normalize without collecting statistics; the forwarded methods
  # tell one step from an unroll by `done` ([B] here), as the networks they forward to do.
  single = tf.nest.map_structure(lambda x: x[0], env_outputs)
  action_out, _ = agent.get_action(zeros[0], single, tf.zeros([2, 1]))
  np.testing.assert_allclose(action_out['a'], out['a'][0], atol=1e-5)
  np.testing.assert_allclose(agent.get_V(zeros[0], single, None)['b'],
                             out['b'][0], atol=1e-5)
  # And a whole [T, B] unroll, without `unroll=True`, as the original's get_V took it.
  np.testing.assert_allclose(agent.get_V(zeros[0], env_outputs, None)['b'], out['b'],
                             atol=1e-5)
  assert normalizer.steps_acc.numpy() == 0


_MULTI_REPLICA_SCRIPT = r'''
import json
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices('CPU')[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from seed_rl.common.normalizer import Normalizer

strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
rng = np.random.default_rng(0)
# Different data (and amounts) per replica.
data = [rng.normal(3., 2., (10, 4)).astype(np.float32),
        rng.normal(-1., 0.5, (6, 5, 4)).astype(np.float32)]
all_data = np.concatenate([d.reshape(-1, 4) for d in data])
results = {'num_replicas': strategy.num_replicas_in_sync}
for mode in ('cross_replica', 'replica'):
  with strategy.scope():
    normalizer = Normalizer()
    normalizer.build(4)
  per_replica = strategy.experimental_distribute_values_from_function(
      lambda ctx: tf.constant(data[ctx.replica_id_in_sync_group]))

  @tf.function
  def accumulate(x):
    strategy.run(lambda x: normalizer.update(x, only_accumulate=True),
                 args=(x,))

  @tf.function
  def finish():
    if mode == 'replica':
      strategy.run(normalizer.finish_update)
    else:
      normalizer.finish_update()

  accumulate(per_replica)
  steps_acc_before = [float(v) for v in normalizer.steps_acc.values]
  finish()
  results[mode] = {
      'steps_acc_before': steps_acc_before,
      'steps': float(normalizer.steps.numpy()),
      'mean_err': float(np.abs(normalizer.mean.numpy()
                               - all_data.mean(0)).max()),
      'std_err': float(np.abs(normalizer.std.numpy()
                              - all_data.std(0)).max()),
      'sum_err': float(np.abs(normalizer.sum.numpy()
                              - all_data.astype(np.float64).sum(0)).max()),
      'acc_after': float(sum(np.abs(np.asarray(v)).sum()
                             for acc in (normalizer.steps_acc,
                                         normalizer.sum_acc,
                                         normalizer.sumsq_acc)
                             for v in acc.values)),
  }
print('RESULT ' + json.dumps(results))
'''


@pytest.mark.timeout(120)
def test_multi_replica_accumulate_and_finish():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', CUDA_VISIBLE_DEVICES='')
  env['PYTHONPATH'] = os.pathsep.join(
      p for p in (REPO_ROOT, env.get('PYTHONPATH')) if p)
  proc = subprocess.run([sys.executable, '-c', _MULTI_REPLICA_SCRIPT],
                        capture_output=True, text=True, timeout=100, env=env,
                        cwd=REPO_ROOT, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = [line for line in proc.stdout.splitlines()
           if line.startswith('RESULT ')]
  assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
  results = json.loads(lines[-1][len('RESULT '):])
  assert results['num_replicas'] == 2
  for mode in ('cross_replica', 'replica'):
    r = results[mode]
    assert r['steps_acc_before'] == [10., 30.], mode
    assert r['steps'] == 40., mode
    assert r['mean_err'] < 1e-4 and r['std_err'] < 1e-4, (mode, r)
    assert r['sum_err'] < 1e-3, (mode, r)
    assert r['acc_after'] == 0., mode
