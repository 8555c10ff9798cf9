"""Tests for seed_rl.agents.policy_gradient.modules.continuous_control_agent.

The configuration and statistics tests run the agent under the strategy of the
process: the default one in the suite, and a MirroredStrategy over two logical
CPUs (as the learner would on two devices) when `test_two_replicas` reruns them
in a child pytest with SEED_RL_TEST_TWO_CPUS=1. Logical devices can only be
configured before TensorFlow initializes and then hold for the whole process,
so the suite's own process is never split.
"""

import math
import os
import subprocess
import sys

import gin
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import continuous_control_agent
from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.agents.policy_gradient.modules import running_statistics as rs
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput
from tests.processes import ROOT

TWO_CPUS = os.environ.get('SEED_RL_TEST_TWO_CPUS') == '1'


def _split_cpu_in_two() -> None:
  cpus = tf.config.list_physical_devices('CPU')
  if cpus and tf.config.get_logical_device_configuration(cpus[0]) is None:
    try:
      tf.config.set_logical_device_configuration(
          cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    except RuntimeError:
      pass  # TensorFlow is initialized: the default strategy is used.


if TWO_CPUS:
  _split_cpu_in_two()

pytestmark = pytest.mark.timeout(60)

OBS_SIZE = 3
NUM_ACTIONS = 2
UNITS = dict(num_units_policy=8, num_units_value=8, num_units_rnn=8)


def _strategy() -> tf.distribute.Strategy:
  cpus = tf.config.list_logical_devices('CPU')
  if len(cpus) >= 2:
    return tf.distribute.MirroredStrategy([cpu.name for cpu in cpus[:2]])
  return tf.distribute.get_strategy()


@pytest.fixture(scope='module', name='strategy')
def _strategy_fixture():
  return _strategy()


def _distribution():
  return parametric_distribution.normal_tanh_distribution(NUM_ACTIONS)


def _agent(**kwargs) -> continuous_control_agent.ContinuousControlAgent:
  kwargs = dict(UNITS, **kwargs)
  return continuous_control_agent.ContinuousControlAgent(_distribution(),
                                                         **kwargs)


def _average_normalizer():
  return input_normalization.InputNormalization(rs.AverageMeanStd())


def _inputs(observation, done=None):
  """`(prev_actions, env_outputs)` for `[..., OBS_SIZE]` observations."""
  observation = tf.convert_to_tensor(observation, tf.float32)
  leading = tf.shape(observation)[:-1]
  done = tf.zeros(leading, tf.bool) if done is None else tf.constant(done)
  prev_actions = tf.zeros(tf.concat([leading, [NUM_ACTIONS]], 0))
  return prev_actions, EnvOutput(
      reward=tf.zeros(leading), done=done, observation=observation,
      abandoned=tf.zeros(leading, tf.bool),
      episode_step=tf.zeros(leading, tf.int32))


def _build(agent):
  """The learner's first call: one step on zeros, outside training."""
  return agent(_inputs(np.zeros([1, OBS_SIZE])), agent.initial_state(1))


def _observations(*shape, seed=0, loc=0., scale=1.):
  rng = np.random.default_rng(seed)
  return rng.normal(loc, scale, size=shape + (OBS_SIZE,)).astype(np.float32)


def _per_replica(strategy, array, axis):
  """`array` split along `axis` into one part per replica."""
  parts = np.split(array, strategy.num_replicas_in_sync, axis=axis)
  return strategy.experimental_distribute_values_from_function(
      lambda context: tf.constant(parts[context.replica_id_in_sync_group]))


def _local(strategy, values):
  return strategy.experimental_local_results(values)


@pytest.mark.timeout(240)
def test_two_replicas(strategy):
  if TWO_CPUS:
    assert strategy.num_replicas_in_sync == 2
    return
  configurations = ' or '.join(TWO_REPLICA_CONFIGS)
  result = subprocess.run(
      [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', __file__, '-k',
       f'two_replicas or update_observation_normalization_statistics or '
       f'first_training_step_creates_the_statistics or '
       f'(configuration_runs and ({configurations}))'],
      cwd=ROOT, capture_output=True, text=True, timeout=220,
      env=dict(os.environ, SEED_RL_TEST_TWO_CPUS='1', TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
  # This test, the two statistics updates, the two first training steps and
  # each of TWO_REPLICA_CONFIGS.
  expected = f'{len(TWO_REPLICA_CONFIGS) + 5} passed'
  assert 'skipped' not in result.stdout and expected in result.stdout, result.stdout[-1000:]


# name -> function returning the agent's keyword arguments.
CONFIGS = {
    'default': lambda: {},
    'shared': lambda: dict(shared=True),
    'residual': lambda: dict(residual_connections=True),
    'shared_residual': lambda: dict(shared=True, residual_connections=True),
    'layer_norm': lambda: dict(
        layer_normalizer=tf.keras.layers.LayerNormalization),
    'layer_norm_residual_shared': lambda: dict(
        layer_normalizer=tf.keras.layers.LayerNormalization,
        residual_connections=True, shared=True),
    'rnn_1': lambda: dict(num_layers_rnn=1),
    'rnn_2': lambda: dict(num_layers_rnn=2),
    'rnn_shared': lambda: dict(num_layers_rnn=1, shared=True),
    'std_independent': lambda: dict(std_independent_of_input=True),
    'std_independent_rnn_shared': lambda: dict(
        std_independent_of_input=True, num_layers_rnn=1, shared=True),
    'corrected': lambda: dict(observation_normalizer=_average_normalizer(),
                              correct_observations=True),
    'clipped': lambda: dict(input_clipping=1.),
    'corrected_clipped': lambda: dict(
        observation_normalizer=_average_normalizer(),
        correct_observations=True, input_clipping=2.),
    'kernel_inits': lambda: dict(
        kernel_init=tf.keras.initializers.Orthogonal(gain=math.sqrt(2.)),
        last_kernel_init_policy=tf.keras.initializers.Orthogonal(gain=.01),
        last_kernel_init_value='glorot_normal'),
    'head_scalings': lambda: dict(last_kernel_init_policy_scaling=.01,
                                  last_kernel_init_value_scaling=2.),
    'tanh_activation': lambda: dict(activation=tf.tanh),
    'no_hidden_layers': lambda: dict(num_layers_policy=0, num_layers_value=0),
    'uneven_torsos': lambda: dict(num_layers_policy=1, num_layers_value=2,
                                  num_units_policy=4, num_units_value=6),
    'ppo_gin': lambda: dict(
        num_layers_policy=2, num_layers_value=2, activation=tf.tanh,
        kernel_init=tf.keras.initializers.Orthogonal(gain=math.sqrt(2.)),
        last_kernel_init_policy=tf.keras.initializers.Orthogonal(gain=.01),
        last_kernel_init_value=tf.keras.initializers.Orthogonal(gain=1.),
        std_independent_of_input=True,
        observation_normalizer=_average_normalizer(), input_clipping=10.),
}

# The configurations that also run on two replicas: together they hold every part whose state
# or inputs a replica could get wrong (the observation statistics and their correction, the
# LSTMs, the std vector, layer normalization); the other ones only arrange the same layers.
TWO_REPLICA_CONFIGS = ('corrected_clipped', 'layer_norm_residual_shared', 'ppo_gin', 'rnn_2',
                       'std_independent_rnn_shared')


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_configuration_runs(strategy, name):
  """Step and unroll shapes, and a gradient for every trainable variable."""
  time_steps, batch_size = 3, 4
  local_batch = batch_size // strategy.num_replicas_in_sync
  with strategy.scope():
    agent = _agent(**CONFIGS[name]())
    _build(agent)
  observations = _per_replica(
      strategy, _observations(time_steps, batch_size, scale=3.), axis=1)
  done = _per_replica(strategy, np.array([[True] * batch_size,
                                          [False, True] * (batch_size // 2),
                                          [False] * batch_size]), axis=1)

  def replica_fn(observation, done):
    prev_actions, env_outputs = _inputs(observation)
    env_outputs = env_outputs._replace(done=done)
    with tf.GradientTape() as tape:
      unrolled, final_state = agent(
          (prev_actions, env_outputs), agent.initial_state(local_batch),
          unroll=True, is_training=True)
      loss = (tf.reduce_sum(unrolled.policy_logits) +
              tf.reduce_sum(unrolled.baseline))
    gradients = tape.gradient(loss, agent.trainable_variables)
    missing = tf.constant(sum(g is None for g in gradients))
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g))
                            for g in gradients if g is not None])
    step, step_state = agent((prev_actions[0], env_outputs._replace(
        done=env_outputs.done[0], observation=observation[0])), final_state)
    return unrolled, final_state, step, step_state, missing, finite

  results = tf.function(
      lambda: strategy.run(replica_fn, (observations, done)))()
  state_shapes = [[local_batch, 8]] * 2 * CONFIGS[name]().get(
      'num_layers_rnn', 0)
  for unrolled, final_state, step, step_state, missing, finite in zip(
      *[_local(strategy, r) for r in results]):
    assert unrolled.action.shape == [time_steps, local_batch, NUM_ACTIONS]
    assert unrolled.policy_logits.shape == [time_steps, local_batch,
                                            2 * NUM_ACTIONS]
    assert unrolled.baseline.shape == [time_steps, local_batch]
    assert step.action.shape == [local_batch, NUM_ACTIONS]
    assert step.policy_logits.shape == [local_batch, 2 * NUM_ACTIONS]
    assert step.baseline.shape == [local_batch]
    assert np.all(np.abs(unrolled.action) <= 1.)  # Tanh-squashed samples.
    for state in (final_state, step_state):
      assert [t.shape.as_list() for t in tf.nest.flatten(state)] == (
          state_shapes)
    assert int(missing) == 0 and bool(finite)


def test_initial_state():
  assert _agent().initial_state(3) == ()
  state = _agent(num_layers_rnn=2, shared=True,
                 num_units_rnn=5).initial_state(3)
  assert len(state) == 2 and all(len(pair) == 2 for pair in state)
  assert all(t.shape == [3, 5] and not np.any(t)
             for t in tf.nest.flatten(state))
  # One stack, also when the MLPs are separate.
  assert len(_agent(num_layers_rnn=2).initial_state(3)) == 2


@pytest.mark.parametrize('value_mlp', [dict(num_layers_value=2),
                                       dict(num_units_value=6)])
def test_shared_mlp_refuses_other_value_mlp_settings(value_mlp):
  """As the original's: with shared=True the value MLP is the policy's."""
  with pytest.raises(ValueError, match='shared=True.*must equal'):
    _agent(shared=True, num_layers_policy=3, num_units_policy=8, **value_mlp)


def test_value_mlp_settings_of_none_take_the_policy_mlp_settings():
  for shared in (False, True):
    agent = _agent(shared=shared, num_layers_policy=2, num_units_policy=7,
                   num_layers_value=None, num_units_value=None)
    _build(agent)
    # pylint: disable=protected-access
    assert [[layer.kernel.shape[1] for layer in mlp]
            for mlp in agent._hidden_layers] == [[7, 7]] * (1 if shared else 2)


def test_without_lstm_a_tensor_state_passes_through_a_tf_function():
  """As the original's PPO test does: a feed-forward agent given a `[B, 64]`
  tensor as its state, inside the training step's tf.function."""
  agent = _agent()
  _build(agent)
  state = tf.reshape(tf.range(2 * 64, dtype=tf.float32), [2, 64])
  inputs = _inputs(_observations(3, 2))

  @tf.function
  def unroll(state):
    return agent(inputs, state, unroll=True, is_training=True)

  outputs, new_state = unroll(state)
  assert outputs.baseline.shape == (3, 2)
  np.testing.assert_array_equal(new_state, state)


@pytest.mark.parametrize('shared', [False, True])
def test_lstm_stack_sits_between_the_shared_and_the_separate_mlps(shared):
  """As in the original: observations (-> shared MLP) -> LSTM stack ->
  (policy and value MLPs ->) heads, with a Keras StackedRNNCells state."""
  value_mlp = dict(num_layers_value=2, num_units_value=7) if shared else dict(
      num_layers_value=1, num_units_value=6)
  agent = _agent(num_layers_rnn=2, shared=shared, num_units_rnn=5,
                 num_layers_policy=2, num_units_policy=7, **value_mlp)
  _build(agent)
  # pylint: disable=protected-access
  first_lstm, second_lstm = agent._lstm_cells
  lstm_input_size = 7 if shared else OBS_SIZE
  assert first_lstm.kernel.shape == (lstm_input_size, 4 * 5)
  assert second_lstm.kernel.shape == (5, 4 * 5)
  if shared:
    assert agent._hidden_layers[0][0].kernel.shape == (OBS_SIZE, 7)
    assert agent._policy_head.kernel.shape == (5, 2 * NUM_ACTIONS)
    assert agent._value_head.kernel.shape == (5, 1)
  else:
    assert agent._hidden_layers[0][0].kernel.shape == (5, 7)  # Policy MLP.
    assert agent._hidden_layers[1][0].kernel.shape == (5, 6)  # Value MLP.
    assert agent._policy_head.kernel.shape == (7, 2 * NUM_ACTIONS)
    assert agent._value_head.kernel.shape == (6, 1)
  # pylint: enable=protected-access
  stacked = tf.keras.layers.StackedRNNCells(
      [tf.keras.layers.LSTMCell(5), tf.keras.layers.LSTMCell(5)])
  keras_state = stacked.get_initial_state(batch_size=4)  # [[h, c], [h, c]]
  inputs = _inputs(_observations(3, 4, seed=2))
  outputs, state = agent(inputs, keras_state, unroll=True)
  expected, expected_state = agent(inputs, agent.initial_state(4), unroll=True)
  np.testing.assert_allclose(outputs.baseline, expected.baseline)
  assert [t.shape for t in tf.nest.flatten(state)] == [(4, 5)] * 4
  tf.nest.map_structure(np.testing.assert_allclose, state, expected_state)
  with pytest.raises(ValueError, match=r'one \(h, c\) pair per LSTM layer \(2\)'):
    agent(inputs, keras_state[:1], unroll=True)


@pytest.mark.parametrize('shared', [False, True])
def test_lstm_state_resets_where_done(shared):
  agent = _agent(num_layers_rnn=2, shared=shared)
  _build(agent)
  observations = _observations(3, 2)
  done = np.array([[False, False], [True, False], [False, False]])
  # A state that no episode starts with.
  start_state = tf.nest.map_structure(lambda t: t + 1.,
                                      agent.initial_state(2))
  unrolled, final_state = agent(_inputs(observations, done), start_state,
                                unroll=True)
  # Row 0 restarts at step 1: from there it is a fresh unroll.
  fresh, _ = agent(_inputs(observations[1:, :1]), agent.initial_state(1),
                   unroll=True)
  np.testing.assert_allclose(unrolled.baseline[1:, :1], fresh.baseline,
                             atol=1e-6)
  np.testing.assert_allclose(unrolled.policy_logits[1:, :1],
                             fresh.policy_logits, atol=1e-6)
  # Row 1 continues from the start state, which is not a fresh one.
  not_reset, _ = agent(_inputs(observations[1:, 1:]), agent.initial_state(1),
                       unroll=True)
  assert np.max(np.abs(unrolled.baseline[1:, 1:] - not_reset.baseline)) > 1e-4
  # Single steps give the same, with the same resets.
  state = start_state
  for t in range(3):
    step, state = agent(_inputs(observations[t], done[t]), state)
    np.testing.assert_allclose(step.policy_logits, unrolled.policy_logits[t],
                               atol=1e-5)
    np.testing.assert_allclose(step.baseline, unrolled.baseline[t], atol=1e-5)
  tf.nest.map_structure(
      lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5), state,
      final_state)


@pytest.mark.parametrize('correct_observations', [False, True])
def test_update_observation_normalization_statistics(strategy,
                                                     correct_observations):
  with strategy.scope():
    agent = _agent(observation_normalizer=_average_normalizer(),
                   correct_observations=correct_observations)
    _build(agent)
  # Per-dimension means and stds far from 0 and 1.
  observations = (_observations(8, seed=1) * [2., 5., .5] +
                  [10., -3., 1.]).astype(np.float32)
  seen_before = agent.preprocess_observations(observations).numpy()
  np.testing.assert_allclose(seen_before, observations, rtol=1e-6)
  outputs_before, _ = agent(_inputs(observations), ())

  tf.function(lambda: strategy.run(
      agent.update_observation_normalization_statistics,
      (_per_replica(strategy, observations, axis=0),)))()

  normalized = agent.observation_normalizer.normalize(observations).numpy()
  np.testing.assert_allclose(normalized.mean(0), 0., atol=1e-5)
  np.testing.assert_allclose(normalized.std(0), 1., atol=1e-5)
  seen = agent.preprocess_observations(observations).numpy()
  outputs, _ = agent(_inputs(observations), ())
  if correct_observations:
    # The correction compensates: the agent's outputs stay the same.
    np.testing.assert_allclose(seen, seen_before, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outputs.baseline, outputs_before.baseline,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs.policy_logits,
                               outputs_before.policy_logits,
                               rtol=1e-4, atol=1e-5)
  else:
    np.testing.assert_allclose(seen, normalized, rtol=1e-6)
    assert np.max(np.abs(outputs.baseline - outputs_before.baseline)) > 1e-3


def test_statistics_only_change_through_the_update():
  agent = _agent(observation_normalizer=_average_normalizer())
  _build(agent)
  observations = _observations(4, 5, loc=7.)
  agent(_inputs(observations), (), unroll=True, is_training=True)
  agent(_inputs(observations[0]), ())
  mean, std = agent.observation_normalizer.get_mean_std()
  np.testing.assert_array_equal(mean, 0.)
  np.testing.assert_array_equal(std, 1.)
  agent.update_observation_normalization_statistics(observations)
  mean, _ = agent.observation_normalizer.get_mean_std()
  np.testing.assert_allclose(mean, observations.reshape(-1, 3).mean(0),
                             rtol=1e-5)


@pytest.mark.parametrize('normalizer', [None, _average_normalizer])
def test_statistics_created_in_a_training_unroll_raise(normalizer):
  agent = _agent(observation_normalizer=normalizer and normalizer())
  inputs = _inputs(_observations(2, 3))
  with pytest.raises(ValueError, match='training unroll'):
    agent(inputs, (), unroll=True, is_training=True)
  assert not agent.observation_normalizer.initialized
  assert not agent.variables
  outputs, _ = agent(inputs, (), unroll=True)  # Outside training: fine.
  assert agent.observation_normalizer.initialized
  outputs_in_training, _ = agent(inputs, (), unroll=True, is_training=True)
  np.testing.assert_allclose(outputs_in_training.baseline, outputs.baseline)


@pytest.mark.parametrize('normalizer', [
    None, lambda: input_normalization.InputNormalization(rs.EMAMeanStd())])
def test_first_training_step_creates_the_statistics(strategy, normalizer):
  """As in the original: a first call with `is_training=True` on one step
  (an inference in the training phase) creates the statistics, and training
  unrolls on every replica then use them."""
  batch_size, time_steps = 4, 3
  local_batch = batch_size // strategy.num_replicas_in_sync
  agent = _agent(observation_normalizer=normalizer and normalizer())
  with strategy.scope():
    step, _ = tf.function(agent.__call__)(
        _inputs(np.zeros([batch_size, OBS_SIZE])), (), unroll=False,
        is_training=True)
  assert step.baseline.shape == [batch_size]
  normalizer = agent.observation_normalizer
  assert normalizer.initialized and normalizer.mean_std_tracker.size == OBS_SIZE
  mean, std = normalizer.get_mean_std()
  np.testing.assert_array_equal(mean, np.zeros(OBS_SIZE))
  np.testing.assert_array_equal(std, np.ones(OBS_SIZE))
  assert normalizer.variables
  for variable in normalizer.variables:  # Created in the strategy's scope.
    assert len(_local(strategy, variable)) == strategy.num_replicas_in_sync
  observations = _observations(time_steps, batch_size, seed=3, loc=2.)

  @tf.function
  def training_unroll(observation):
    return agent(_inputs(observation), (), unroll=True, is_training=True)

  results = tf.function(lambda: strategy.run(
      training_unroll, (_per_replica(strategy, observations, axis=1),)))()
  parts = np.split(observations, strategy.num_replicas_in_sync, axis=1)
  for (unrolled, _), part in zip(_local(strategy, results), parts):
    assert unrolled.policy_logits.shape == [time_steps, local_batch,
                                            2 * NUM_ACTIONS]
    # Statistics 0 and 1: the same as an inference on the same inputs.
    expected, _ = agent(_inputs(part), (), unroll=True)
    np.testing.assert_allclose(unrolled.baseline, expected.baseline,
                               atol=1e-5)


def test_observations_must_match_the_statistics():
  agent = _agent()
  _build(agent)
  with pytest.raises(ValueError, match='size 3, not 4'):
    agent(_inputs(np.zeros([2, 4], np.float32)), ())


@pytest.mark.parametrize('std_independent_of_input', [False, True])
def test_std_independent_of_input(std_independent_of_input):
  agent = _agent(std_independent_of_input=std_independent_of_input)
  _build(agent)
  observations = _observations(6, scale=3.)
  outputs, _ = agent(_inputs(observations), ())
  logits = outputs.policy_logits.numpy()
  base = _distribution()(logits).distribution.distribution  # The Normal.
  stds, means = base.scale.numpy(), base.loc.numpy()
  assert np.max(np.abs(means - means[0])) > 1e-3  # Means depend on inputs.
  if not std_independent_of_input:
    assert np.max(np.abs(stds - stds[0])) > 1e-3
    return
  np.testing.assert_array_equal(stds, np.broadcast_to(stds[0], stds.shape))
  np.testing.assert_array_equal(logits[:, NUM_ACTIONS:], 0.)
  assert len(agent.std_parameters.shape) == 1
  agent.std_parameters.assign([.5, -1.])
  outputs, _ = agent(_inputs(observations), ())
  np.testing.assert_array_equal(outputs.policy_logits[:, NUM_ACTIONS:],
                                np.tile([[.5, -1.]], [6, 1]))
  with tf.GradientTape() as tape:
    outputs, _ = agent(_inputs(observations), ())
    log_prob = tf.reduce_sum(_distribution().log_prob(
        outputs.policy_logits, tf.zeros([6, NUM_ACTIONS])))
  assert np.all(np.abs(tape.gradient(log_prob, agent.std_parameters)) > 0.)
  assert any(v is agent.std_parameters for v in agent.trainable_variables)


def test_std_independent_of_input_needs_even_param_size():
  with pytest.raises(ValueError, match='even size'):
    continuous_control_agent.ContinuousControlAgent(
        parametric_distribution.categorical_distribution(3, tf.int32),
        std_independent_of_input=True)


def test_kernel_initializers():
  orthogonal = tf.keras.initializers.Orthogonal(gain=2.)
  agent = _agent(num_layers_policy=3, kernel_init=orthogonal,
                 last_kernel_init_policy=tf.keras.initializers.Constant(1.),
                 last_kernel_init_policy_scaling=.5,
                 last_kernel_init_value=tf.keras.initializers.Constant(2.),
                 last_kernel_init_value_scaling=3.)
  _build(agent)
  # pylint: disable=protected-access
  square_kernels = [layer.kernel.numpy()
                    for layer in agent._hidden_layers[0][1:]]
  np.testing.assert_allclose(agent._policy_head.kernel, .5)
  np.testing.assert_allclose(agent._value_head.kernel, 6.)
  # pylint: enable=protected-access
  for kernel in square_kernels:
    np.testing.assert_allclose(kernel.T @ kernel, 4. * np.eye(8), atol=1e-4)
  # One initializer instance, yet every layer draws its own kernel.
  assert np.max(np.abs(square_kernels[0] - square_kernels[1])) > 1e-2


def test_heads_default_to_kernel_init_and_scale():
  agent = _agent(kernel_init=tf.keras.initializers.Constant(.25),
                 last_kernel_init_value_scaling=4.)
  _build(agent)
  # pylint: disable=protected-access
  np.testing.assert_allclose(agent._policy_head.kernel, .25)
  np.testing.assert_allclose(agent._value_head.kernel, 1.)
  np.testing.assert_allclose(agent._hidden_layers[0][0].kernel, .25)
  # pylint: enable=protected-access


@pytest.mark.parametrize('residual_connections', [False, True])
def test_residual_connections(residual_connections):
  agent = _agent(residual_connections=residual_connections, shared=True,
                 num_layers_policy=3)
  _build(agent)
  # pylint: disable=protected-access
  first, *others = agent._hidden_layers[0]
  for layer in others:  # Layers after the first now output zeros.
    layer.kernel.assign(tf.zeros_like(layer.kernel))
  observations = _observations(5)
  outputs, _ = agent(_inputs(observations), ())
  if residual_connections:  # The first layer's output passes through.
    expected = tf.squeeze(agent._value_head(first(observations)), -1)
  else:
    expected = tf.zeros([5])
  # pylint: enable=protected-access
  np.testing.assert_allclose(outputs.baseline, expected, atol=1e-6)


@pytest.mark.parametrize('layer_norm', [False, True])
def test_layer_normalizer(layer_norm):
  agent = _agent(layer_normalizer=(tf.keras.layers.LayerNormalization
                                   if layer_norm else None))
  _build(agent)
  observations = _observations(4, scale=10.)
  outputs, _ = agent(_inputs(observations), ())
  scaled_outputs, _ = agent(_inputs(10. * observations), ())
  difference = np.max(np.abs(outputs.baseline - scaled_outputs.baseline))
  # Layer normalization of the first layer's input ignores the input scale.
  assert (difference < 1e-4) if layer_norm else (difference > 1e-2)
  num_normalizers = sum('gamma' in v.name for v in agent.variables)
  # One per hidden layer (3 + 3) and one per head, as in the original.
  assert num_normalizers == (8 if layer_norm else 0)


@pytest.mark.parametrize('shared', [False, True])
def test_layer_normalizer_normalizes_the_heads_inputs(shared):
  """Without hidden layers the heads read the observations themselves:
  normalized, their outputs ignore the observations' scale."""
  agent = _agent(layer_normalizer=tf.keras.layers.LayerNormalization,
                 num_layers_policy=0, num_layers_value=0, shared=shared)
  _build(agent)
  observations = _observations(4, scale=10.)
  outputs, _ = agent(_inputs(observations), ())
  scaled_outputs, _ = agent(_inputs(10. * observations), ())
  # Up to LayerNormalization's epsilon, which weighs a little more at the smaller scale.
  np.testing.assert_allclose(scaled_outputs.baseline, outputs.baseline,
                             atol=1e-3)
  np.testing.assert_allclose(scaled_outputs.policy_logits,
                             outputs.policy_logits, atol=1e-3)
  # With shared inputs the two heads share their normalization too.
  num_normalizers = sum('gamma' in v.name for v in agent.variables)
  assert num_normalizers == (1 if shared else 2)


class _CountingLayerNormalization(tf.keras.layers.LayerNormalization):
  """A LayerNormalization that counts the tensors it normalizes."""

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    self.calls = 0

  def call(self, inputs):
    self.calls += 1
    return super().call(inputs)


@pytest.mark.parametrize('shared', [False, True])
def test_each_heads_input_is_normalized_once(shared):
  """With shared inputs the heads read one tensor: it is normalized once,
  not once per head."""
  agent = _agent(layer_normalizer=_CountingLayerNormalization,
                 num_layers_policy=1, num_layers_value=1, shared=shared)
  _build(agent)
  # pylint: disable=protected-access
  for normalizer in agent._head_normalizers:
    normalizer.calls = 0
  agent(_inputs(_observations(4)), ())
  assert [n.calls for n in agent._head_normalizers] == [1] * (1 if shared else 2)
  # pylint: enable=protected-access


def test_layer_normalizer_instance_is_refused():
  with pytest.raises(ValueError, match='layer instance'):
    _agent(layer_normalizer=tf.keras.layers.LayerNormalization())


@pytest.mark.parametrize('correct_observations', [False, True])
def test_input_clipping(correct_observations):
  agent = _agent(input_clipping=2., correct_observations=correct_observations)
  _build(agent)
  agent.observation_normalizer.compensation_std.assign([2., 2., 2.])
  agent.observation_normalizer.compensation_mean.assign([1., 1., 1.])
  observations = np.array([[-100., 0.5, 100.]], np.float32)
  seen = agent.preprocess_observations(observations).numpy()
  clipped = np.array([[-2., .5, 2.]])
  # The correction comes after the clipping.
  np.testing.assert_allclose(
      seen, 2. * clipped + 1. if correct_observations else clipped)


def test_variables_copy_and_checkpoint(tmp_path):
  def make():
    agent = _agent(num_layers_rnn=1, std_independent_of_input=True,
                   layer_normalizer=tf.keras.layers.LayerNormalization,
                   observation_normalizer=_average_normalizer(),
                   correct_observations=False)
    _build(agent)
    return agent

  source, target = make(), make()
  source.update_observation_normalization_statistics(_observations(9, loc=4.))
  source.std_parameters.assign([.3, .7])
  for target_variable, source_variable in zip(target.variables,
                                              source.variables):
    target_variable.assign(source_variable)  # As the learner does.
  inputs = _inputs(_observations(2, 3, seed=5))
  expected, _ = source(inputs, source.initial_state(3), unroll=True)
  copied, _ = target(inputs, target.initial_state(3), unroll=True)
  np.testing.assert_allclose(copied.policy_logits, expected.policy_logits,
                             atol=1e-6)
  np.testing.assert_allclose(copied.baseline, expected.baseline, atol=1e-6)

  trainable = {id(v) for v in source.trainable_variables}
  normalizer = source.observation_normalizer
  assert not trainable & {id(v) for v in normalizer.variables}
  assert len(trainable) + len(source.non_trainable_variables) == len(
      source.variables)
  path = tf.train.Checkpoint(agent=source).save(str(tmp_path / 'ckpt'))
  saved = [name for name, _ in tf.train.list_variables(path)
           if name.startswith('agent/')]
  assert len(saved) == len(source.variables)


def test_gin_configurable():
  try:
    gin.parse_config([
        'ContinuousControlAgent.num_layers_policy = 1',
        'ContinuousControlAgent.num_units_policy = 5',
        'ContinuousControlAgent.std_independent_of_input = True',
        'ContinuousControlAgent.observation_normalizer = '
        '@InputNormalization()',
        'InputNormalization.mean_std_tracker = @AverageMeanStd()',
    ])
    agent = continuous_control_agent.ContinuousControlAgent(
        parametric_action_distribution=_distribution())
  finally:
    gin.clear_config()
  _build(agent)
  # pylint: disable=protected-access
  assert [layer.kernel.shape for layer in agent._hidden_layers[0]] == [(3, 5)]
  # pylint: enable=protected-access
  assert isinstance(agent.observation_normalizer.mean_std_tracker,
                    rs.AverageMeanStd)
  assert agent.std_parameters is not None
