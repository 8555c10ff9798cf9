"""Tests of the shared network plumbing and of the networks' `env_outputs` calling convention."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.r2d2 import networks as r2d2_networks
from seed_rl.agents.vtrace import networks as vtrace_networks
from seed_rl.common import networks
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput
from seed_rl.environments.atari import networks as atari_networks

pytestmark = pytest.mark.timeout(120)


def _assert_nests_close(actual, expected, atol=1e-6):
  tf.nest.assert_same_structure(actual, expected)
  for a, e in zip(tf.nest.flatten(actual), tf.nest.flatten(expected)):
    np.testing.assert_allclose(a, e, atol=atol)


def test_reset_where_done_replaces_only_the_done_rows_of_every_tensor():
  state = (tf.constant([[1., 2.], [3., 4.], [5., 6.]]), {'count': tf.constant([7, 8, 9])})
  initial = (tf.zeros([3, 2]), {'count': tf.constant([-1, -2, -3])})
  reset = networks.reset_where_done(tf.constant([True, False, True]), state, initial)
  assert reset[0].numpy().tolist() == [[0., 0.], [3., 4.], [0., 0.]]
  assert reset[1]['count'].numpy().tolist() == [-1, 8, -3]


def _counting_step(increment, count):
  count = count + increment
  return count * 10, count


def test_unroll_recurrent_resets_before_the_step_where_done():
  done = tf.constant([[False, True], [False, False], [True, False], [False, False],
                      [False, True]])
  outputs, final_state = networks.unroll_recurrent(
      _counting_step, tf.ones([5, 2], tf.int32), done, start_state=tf.constant([100, 100]),
      initial_state=tf.zeros([2], tf.int32))
  assert (outputs.numpy() // 10).tolist() == [[101, 1], [102, 2], [1, 3], [2, 4], [3, 1]]
  assert final_state.numpy().tolist() == [3, 1]


def test_unroll_recurrent_handles_nested_inputs_outputs_and_states():
  def step(inputs, state):
    x, y = inputs
    total, count = state
    return {'sum': total + x + y}, (total + x + y, count + 1)

  done = tf.constant([[False], [True], [False]])
  outputs, (total, count) = networks.unroll_recurrent(
      step, (tf.ones([3, 1]), 2 * tf.ones([3, 1])), done, (tf.constant([5.]), tf.constant([7])),
      (tf.zeros([1]), tf.zeros([1], tf.int32)))
  assert outputs['sum'].numpy()[:, 0].tolist() == [8., 3., 6.]
  assert total.numpy().tolist() == [6.] and count.numpy().tolist() == [2]


def test_unroll_recurrent_rejects_mismatched_time_steps():
  with pytest.raises(ValueError, match='3 time steps but done has 2'):
    networks.unroll_recurrent(_counting_step, tf.ones([3, 1]), tf.zeros([2, 1], tf.bool),
                              tf.zeros([1]), tf.zeros([1]))


def test_lstm_stack_unroll_equals_stepping_the_cells_by_hand():
  cells = [tf.keras.layers.LSTMCell(5), tf.keras.layers.LSTMCell(3)]
  rng = np.random.RandomState(0)
  inputs = tf.constant(rng.randn(4, 2, 6), tf.float32)
  done = np.array([[False, False], [True, False], [False, True], [False, False]])
  start = tuple((tf.constant(rng.randn(2, c.units), tf.float32),
                 tf.constant(rng.randn(2, c.units), tf.float32)) for c in cells)
  initial = tf.nest.map_structure(tf.zeros_like, start)
  outputs, final = networks.unroll_recurrent(
      networks.lstm_stack_step(cells), inputs, tf.constant(done), start, initial)
  assert outputs.shape == [4, 2, 3]

  state = start
  for t in range(4):
    state = tuple((tf.where(done[t][:, None], 0., h), tf.where(done[t][:, None], 0., c))
                  for h, c in state)
    x, new_state = inputs[t], []
    for cell, (h, c) in zip(cells, state):
      x, (h, c) = cell(x, [h, c])
      new_state.append((h, c))
    state = tuple(new_state)
    np.testing.assert_allclose(outputs[t], x, atol=1e-6)
  _assert_nests_close(final, state)
  assert not np.allclose(final[1][0], start[1][0])


def test_batch_apply_merges_time_and_batch_and_splits_nested_outputs():
  seen_shapes = []

  def fn(x, y):
    seen_shapes.append((x.shape.as_list(), y['b'].shape.as_list()))
    return {'sum': x + tf.reduce_sum(y['b'], axis=-1, keepdims=True),
            'first': x[:, 0]}

  x = tf.reshape(tf.range(3 * 2 * 4, dtype=tf.float32), [3, 2, 4])
  y = {'b': tf.ones([3, 2, 5])}
  outputs = networks.batch_apply(fn, (x, y))
  assert seen_shapes == [([6, 4], [6, 5])]
  np.testing.assert_array_equal(outputs['sum'], x + 5.)
  np.testing.assert_array_equal(outputs['first'], x[:, :, 0])


def test_as_env_output_accepts_env_output_tuple_and_list():
  fields = [tf.constant([1.]), tf.constant([True]), tf.constant([[2.]]), tf.constant([False]),
            tf.constant([3])]
  env_output = EnvOutput(*fields)
  assert networks.as_env_output(env_output) is env_output
  for given in (tuple(fields), list(fields)):
    converted = networks.as_env_output(given)
    assert type(converted) is EnvOutput
    assert all(a is b for a, b in zip(converted, fields))
    assert converted.observation is fields[2] and converted.episode_step is fields[4]


def test_as_env_output_rejects_wrong_length_and_type_clearly():
  with pytest.raises(ValueError, match=r'5 elements in EnvOutput order \(reward, done, '
                                       r'observation, abandoned, episode_step\), got 4'):
    networks.as_env_output((1., False, 0., False))
  with pytest.raises(TypeError, match='EnvOutput or a tuple/list'):
    networks.as_env_output(tf.zeros([5]))


def test_apply_step_or_unroll_adds_and_removes_the_time_dimension():
  seen = []

  def unroll_fn(prev_actions, env_outputs, state):
    seen.append((prev_actions.shape.as_list(), type(env_outputs)))
    return {'out': env_outputs.reward + tf.cast(prev_actions, tf.float32)}, state + 1

  rewards = np.array([1., 2.], np.float32)
  step = (rewards, np.array([False, True]), np.zeros([2, 3]), np.array([False, False]),
          np.array([0, 4]))
  outputs, state = networks.apply_step_or_unroll(unroll_fn, np.array([3, 4]), step,
                                                 tf.constant(0), unroll=False)
  assert outputs['out'].numpy().tolist() == [4., 6.] and state.numpy() == 1
  time_major = tf.nest.map_structure(lambda t: np.stack([t, t, t]), step)
  outputs, _ = networks.apply_step_or_unroll(unroll_fn, tf.zeros([3, 2], tf.int32), time_major,
                                             tf.constant(0), unroll=True)
  assert outputs['out'].shape == [3, 2]
  assert seen == [([1, 2], EnvOutput), ([3, 2], EnvOutput)]


def test_track_layers_makes_nested_layer_lists_checkpointable(tmp_path):
  model = tf.keras.Model()
  layers = networks.track_layers(
      model, '_layer', [tf.keras.layers.Dense(2), [tf.keras.layers.Dense(3)]])
  assert model._layer_0 is layers[0] and model._layer_1_0 is layers[1][0]
  layers[0].build([None, 4])
  layers[1][0].build([None, 2])
  path = tf.train.Checkpoint(model=model).write(str(tmp_path / 'ckpt'))
  names = [name for name, _ in tf.train.list_variables(path) if name.startswith('model/')]
  assert sum('_layer_0/' in n for n in names) == 2 and sum('_layer_1_0/' in n for n in names) == 2


# Each network with tiny inputs: (make network, call(net, prev_actions, env_outputs, state,
# unroll), observation shape, prev_actions dtype, outputs compared).
def _vtrace_call(net, prev_actions, env_outputs, state, unroll):
  return net(prev_actions, env_outputs, state, unroll=unroll)


def _r2d2_call(net, prev_actions, env_outputs, state, unroll):
  return net((prev_actions, env_outputs), state, unroll=unroll)


def _mlp_and_lstm():
  dist = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(3))
  return vtrace_networks.MLPandLSTM(dist, mlp_sizes=[8], lstm_sizes=[4])


_NETWORKS = {
    'MLPandLSTM': (_mlp_and_lstm, _vtrace_call, (4,), tf.int64, ('policy_logits', 'baseline')),
    'ImpalaDeep': (lambda: vtrace_networks.ImpalaDeep(3), _vtrace_call, (8, 8, 3), tf.int64,
                   ('policy_logits', 'baseline')),
    'RecurrentQNetwork': (lambda: r2d2_networks.RecurrentQNetwork(3, (8,), 4), _r2d2_call, (4,),
                          tf.int32, ('action', 'q_values')),
    'RecurrentQNetwork without LSTM': (lambda: r2d2_networks.RecurrentQNetwork(3, (8,), 0),
                                       _r2d2_call, (4,), tf.int32, ('action', 'q_values')),
    'DuelingLSTMDQNNet': (lambda: atari_networks.DuelingLSTMDQNNet(3, (36, 36, 1), 2),
                          _r2d2_call, (36, 36, 1), tf.int32, ('action', 'q_values')),
}


def _random_inputs(leading_shape, observation_shape, action_dtype, seed):
  rng = np.random.RandomState(seed)
  leading_shape = list(leading_shape)
  done = rng.rand(*leading_shape) < 0.3
  env_outputs = EnvOutput(
      reward=tf.constant(rng.randn(*leading_shape), tf.float32), done=tf.constant(done),
      observation=tf.constant(rng.randint(0, 256, leading_shape + list(observation_shape)),
                              tf.uint8),
      abandoned=tf.zeros(leading_shape, tf.bool), episode_step=tf.zeros(leading_shape, tf.int32))
  return tf.constant(rng.randint(0, 3, leading_shape), action_dtype), env_outputs


@pytest.mark.parametrize('name', sorted(_NETWORKS))
@pytest.mark.parametrize('unroll', [False, True])
def test_networks_accept_env_outputs_as_a_plain_tuple(name, unroll):
  make, call, observation_shape, action_dtype, compared = _NETWORKS[name]
  net = make()
  leading_shape = [3, 2] if unroll else [2]
  prev_actions, env_outputs = _random_inputs(leading_shape, observation_shape, action_dtype, 0)
  state = net.initial_state(2)
  _, state = call(net, prev_actions[0] if unroll else prev_actions,
                  tf.nest.map_structure(lambda t: t[0], env_outputs) if unroll else env_outputs,
                  state, False)  # A state that is not the initial one.
  expected, expected_state = call(net, prev_actions, env_outputs, state, unroll)
  actual, actual_state = call(net, prev_actions, tuple(env_outputs), state, unroll)
  assert type(actual) is type(expected)
  for field in compared:
    assert getattr(actual, field).shape[:len(leading_shape)] == leading_shape
    np.testing.assert_allclose(getattr(actual, field), getattr(expected, field), atol=1e-6)
  _assert_nests_close(actual_state, expected_state)
  if name == 'DuelingLSTMDQNNet':
    assert type(actual_state) is atari_networks.AgentState
