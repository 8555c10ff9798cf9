"""Tests of the V-trace networks: shapes, recurrent resets, unroll consistency, checkpoints."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.vtrace import networks
from seed_rl.common import parametric_distribution
from seed_rl.common import utils

pytestmark = pytest.mark.timeout(120)


def _env_outputs(observation, done=None, reward=None):
  leading = observation.shape[:-3] if observation.ndim > 3 else observation.shape[:-1]
  return utils.EnvOutput(
      reward=tf.zeros(leading) if reward is None else tf.constant(reward, tf.float32),
      done=tf.zeros(leading, tf.bool) if done is None else tf.constant(done),
      observation=tf.constant(observation),
      abandoned=tf.zeros(leading, tf.bool),
      episode_step=tf.zeros(leading, tf.int32))


def _mlp_agent(lstm_sizes=(8,)):
  dist = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(3))
  return networks.MLPandLSTM(dist, mlp_sizes=[16], lstm_sizes=lstm_sizes)


def test_mlp_and_lstm_step_shapes():
  agent = _mlp_agent()
  state = agent.initial_state(5)
  outputs, new_state = agent(tf.zeros([5], tf.int64), _env_outputs(np.ones([5, 4], np.float32)),
                             state)
  assert outputs.action.shape == [5] and outputs.action.dtype == tf.int64
  assert outputs.policy_logits.shape == [5, 3]
  assert outputs.baseline.shape == [5]
  assert tf.nest.map_structure(lambda t: t.shape.as_list(), new_state) == (([5, 8], [5, 8]),)
  assert agent.initial_state(2) != () and _mlp_agent(lstm_sizes=()).initial_state(2) == ()


def test_unroll_equals_step_by_step_with_resets():
  agent = _mlp_agent()
  rng = np.random.RandomState(0)
  observations = rng.randn(4, 2, 4).astype(np.float32)
  done = np.array([[False, False], [False, True], [True, False], [False, False]])
  prev_actions = tf.zeros([4, 2], tf.int64)
  unrolled, unrolled_state = agent(prev_actions, _env_outputs(observations, done), 
                                   agent.initial_state(2), unroll=True)
  state = agent.initial_state(2)
  for t in range(4):
    step, state = agent(prev_actions[t], _env_outputs(observations[t], done[t]), state)
    np.testing.assert_allclose(step.policy_logits, unrolled.policy_logits[t], atol=1e-5)
    np.testing.assert_allclose(step.baseline, unrolled.baseline[t], atol=1e-5)
  tf.nest.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5),
                        state, unrolled_state)


def test_done_resets_the_recurrent_state():
  agent = _mlp_agent()
  obs = np.ones([1, 4], np.float32)
  fresh, _ = agent(tf.zeros([1], tf.int64), _env_outputs(obs), agent.initial_state(1))
  _, state = agent(tf.zeros([1], tf.int64), _env_outputs(obs * 3), agent.initial_state(1))
  carried, _ = agent(tf.zeros([1], tf.int64), _env_outputs(obs), state)
  reset, _ = agent(tf.zeros([1], tf.int64), _env_outputs(obs, done=[True]), state)
  np.testing.assert_allclose(reset.baseline, fresh.baseline, atol=1e-6)
  assert not np.allclose(carried.baseline, fresh.baseline)


def _impala_call(agent, observation, prev_action, state):
  return agent(tf.constant(prev_action, tf.int64), _env_outputs(observation, reward=[5.0]), state)


def test_impala_deep_has_39_trainable_variables_and_round_trips_checkpoints(tmp_path):
  agent = networks.ImpalaDeep(9)
  observation = np.random.RandomState(1).randint(0, 256, [1, 72, 96, 3]).astype(np.uint8)
  outputs, _ = _impala_call(agent, observation, [2], agent.initial_state(1))
  assert len(agent.trainable_variables) == 39
  assert outputs.policy_logits.shape == [1, 9] and outputs.action.dtype == tf.int64
  path = tf.train.Checkpoint(agent=agent).save(str(tmp_path / 'ckpt'))

  for variable in agent.trainable_variables:
    variable.assign(variable + 1.0)
  perturbed, _ = _impala_call(agent, observation, [2], agent.initial_state(1))
  assert not np.allclose(perturbed.policy_logits, outputs.policy_logits)

  tf.train.Checkpoint(agent=agent).restore(path).assert_consumed()
  restored, _ = _impala_call(agent, observation, [2], agent.initial_state(1))
  np.testing.assert_array_equal(restored.policy_logits, outputs.policy_logits)
