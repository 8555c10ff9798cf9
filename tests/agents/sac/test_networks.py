"""Tests of the SAC networks: shapes, the calling convention, recurrent unrolls."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.sac import networks
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput

pytestmark = pytest.mark.timeout(120)

_DIST = parametric_distribution.get_parametric_distribution_for_action_space(
    gymnasium.spaces.Box(-1, 1, (2,), np.float32))


def _env_outputs(shape, observation, seed=0):
  rng = np.random.RandomState(seed)
  done = rng.rand(*shape) < 0.3
  return EnvOutput(tf.constant(rng.randn(*shape), tf.float32), tf.constant(done), observation,
                   tf.zeros(shape, tf.bool), tf.zeros(shape, tf.int32))


def _goal_observation(shape, seed=0):
  rng = np.random.RandomState(seed)
  return {'observation': tf.constant(rng.randn(*shape, 3), tf.float32),
          'achieved_goal': tf.constant(rng.randn(*shape, 2), tf.float32),
          'desired_goal': tf.constant(rng.randn(*shape, 2), tf.float32)}


def test_actor_critic_mlp_shapes_for_steps_and_unrolls():
  agent = networks.ActorCriticMLP(_DIST, n_critics=3, mlp_sizes=[8, 8])
  for shape, unroll in (((4,), False), ((5, 4), True)):
    env_outputs = _env_outputs(shape, tf.ones(shape + (3,)))
    prev_actions = tf.zeros(shape + (2,))
    assert agent.get_action_params(prev_actions, env_outputs, (), unroll).shape == shape + (4,)
    assert agent.get_V(prev_actions, env_outputs, (), unroll).shape == shape
    assert agent.get_Q(prev_actions, env_outputs, (), prev_actions, unroll).shape == shape + (3,)
    action, state = agent(prev_actions, tuple(env_outputs), (), unroll=unroll)  # A 5-tuple.
    assert action.shape == shape + (2,) and state == ()
    assert np.all(np.abs(action.numpy()) <= 1)


def test_critics_are_distinct_networks_and_see_the_action():
  agent = networks.ActorCriticMLP(_DIST, n_critics=2, mlp_sizes=[8])
  env_outputs = _env_outputs((3,), _goal_observation((3,)))  # Dict observations too.
  q_a = agent.get_Q(None, env_outputs, (), tf.zeros([3, 2]))
  q_b = agent.get_Q(None, env_outputs, (), tf.ones([3, 2]))
  assert not np.allclose(q_a[:, 0], q_a[:, 1])
  assert not np.allclose(q_a, q_b)


@pytest.mark.parametrize('observation_fn', [
    lambda shape: tf.constant(np.random.RandomState(1).randn(*shape, 3), tf.float32),
    _goal_observation,
])
def test_actor_critic_lstm_unroll_equals_step_by_step(observation_fn):
  time_steps, batch = 6, 3
  agent = networks.ActorCriticLSTM(_DIST, n_critics=2, lstm_sizes=[8, 4], pre_mlp_sizes=[8],
                                   post_mlp_sizes=[8], ff_mlp_sizes=[8])
  env_outputs = _env_outputs((time_steps, batch), observation_fn((time_steps, batch)))
  rng = np.random.RandomState(2)
  prev_actions = tf.constant(rng.uniform(-1, 1, (time_steps, batch, 2)), tf.float32)
  actions = tf.constant(rng.uniform(-1, 1, (time_steps, batch, 2)), tf.float32)
  state = agent.initial_state(batch)
  values = agent.get_V(prev_actions, env_outputs, state, unroll=True)
  q_values = agent.get_Q(prev_actions, env_outputs, state, actions, unroll=True)
  params = agent.get_action_params(prev_actions, env_outputs, state, unroll=True)

  step_values, step_q_values, step_params = [], [], []
  for t in range(time_steps):
    step = tf.nest.map_structure(lambda x, t=t: x[t], (prev_actions, env_outputs))
    step_values.append(agent.get_V(*step, state))
    step_q_values.append(agent.get_Q(*step, state, actions[t]))
    step_params.append(agent.get_action_params(*step, state))
    _, state = agent(*step, state)  # Advances every network's state by one step.
  np.testing.assert_allclose(values, tf.stack(step_values), atol=1e-4)
  np.testing.assert_allclose(q_values, tf.stack(step_q_values), atol=1e-4)
  np.testing.assert_allclose(params, tf.stack(step_params), atol=1e-4)


def test_the_lstm_history_ignores_the_desired_goal():
  agent = networks.ActorCriticLSTM(_DIST, n_critics=1, lstm_sizes=[4], pre_mlp_sizes=[],
                                   post_mlp_sizes=[4], ff_mlp_sizes=[])
  observation = _goal_observation((2, 3))
  env_outputs = _env_outputs((2, 3), observation)
  other_goal = dict(observation, desired_goal=observation['desired_goal'] + 5.)
  state = agent.initial_state(3)
  prev_actions = tf.zeros([2, 3, 2])
  _, state_a = agent(prev_actions, env_outputs, state, unroll=True)
  _, state_b = agent(prev_actions, env_outputs._replace(observation=other_goal), state,
                     unroll=True)
  for a, b in zip(tf.nest.flatten(state_a[1]), tf.nest.flatten(state_b[1])):
    np.testing.assert_allclose(a, b)


def test_value_q_and_policy_heads_take_time_major_inputs_by_default():
  """As the original's `get_V`, `get_Q` and `get_action_params`: `[T, B]` inputs without
  `unroll` are an unroll (`T = 1` too), equal to the step-by-step results; `[B]` inputs are
  still one step."""
  time_steps, batch = 4, 3
  lstm = networks.ActorCriticLSTM(_DIST, n_critics=2, lstm_sizes=[8], pre_mlp_sizes=[8],
                                  post_mlp_sizes=[8], ff_mlp_sizes=[8])
  mlp = networks.ActorCriticMLP(_DIST, n_critics=2, mlp_sizes=[8])
  env_outputs = _env_outputs((time_steps, batch), _goal_observation((time_steps, batch)))
  rng = np.random.RandomState(3)
  prev_actions = tf.constant(rng.uniform(-1, 1, (time_steps, batch, 2)), tf.float32)
  actions = tf.constant(rng.uniform(-1, 1, (time_steps, batch, 2)), tf.float32)
  for agent in (lstm, mlp):
    state = agent.initial_state(batch)
    heads = lambda p, e, s, a: (agent.get_V(p, e, s), agent.get_Q(p, e, s, a),
                                agent.get_action_params(p, e, s))
    unrolled = heads(prev_actions, env_outputs, state, actions)
    assert [x.shape for x in unrolled] == [(time_steps, batch), (time_steps, batch, 2),
                                           (time_steps, batch, 4)]
    first = tf.nest.map_structure(lambda x: x[:1], (prev_actions, env_outputs))
    for got, one_step in zip(unrolled, heads(*first, state, actions[:1])):
      assert one_step.shape[:2] == (1, batch)
      np.testing.assert_allclose(got[:1], one_step, atol=1e-5)
    steps = []
    for t in range(time_steps):
      step = tf.nest.map_structure(lambda x, t=t: x[t], (prev_actions, env_outputs))
      steps.append(heads(*step, state, actions[t]))
      _, state = agent(*step, state)
    for got, expected in zip(unrolled, zip(*steps)):
      np.testing.assert_allclose(got, tf.stack(expected), atol=1e-4)


def test_inputs_whose_done_is_neither_a_step_nor_an_unroll_ask_for_unroll():
  agent = networks.ActorCriticLSTM(_DIST, n_critics=1, lstm_sizes=[4], pre_mlp_sizes=[],
                                   post_mlp_sizes=[4], ff_mlp_sizes=[])
  env_outputs = _env_outputs((2, 3), tf.zeros([2, 3, 3]))
  env_outputs = env_outputs._replace(done=tf.zeros([2, 3, 1], tf.bool))
  with pytest.raises(ValueError, match=r'\[T, B\].*unroll=True'):
    agent.get_V(tf.zeros([2, 3, 2]), env_outputs, agent.initial_state(3))
