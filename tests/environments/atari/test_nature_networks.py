"""The Atari Nature-DQN networks with frames stacked inside them (real TensorFlow)."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import parametric_distribution
from seed_rl.common.networks import EnvOutput
from seed_rl.environments.atari import nature_networks

NUM_ACTIONS = 6


def _net(**kwargs):
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(NUM_ACTIONS))
  return nature_networks.NatureActorCritic(distribution, **kwargs)


def _inputs(rng, shape, done=None):
  """Random previous actions and env outputs of leading `shape`."""
  done = np.zeros(shape, bool) if done is None else np.asarray(done)
  env_outputs = EnvOutput(
      reward=tf.constant(rng.randn(*shape), tf.float32), done=tf.constant(done),
      observation=tf.constant(rng.randint(0, 256, list(shape) + [84, 84, 1]), tf.uint8),
      abandoned=tf.zeros(shape, tf.bool), episode_step=tf.zeros(shape, tf.int32))
  return tf.constant(rng.randint(0, NUM_ACTIONS, shape), tf.int64), env_outputs


@pytest.mark.timeout(60)
@pytest.mark.parametrize('lstm_sizes', [[], [16]])
def test_stacked_unroll_equals_step_by_step_with_done_in_the_middle(lstm_sizes):
  net = _net(lstm_sizes=lstm_sizes, stack_size=4)
  rng = np.random.RandomState(1)
  state = net.initial_state(2)
  for _ in range(2):  # A running episode's frames (and LSTM state) to start from.
    _, state = net(*_inputs(rng, [2]), state)
  done = [[False, False], [False, True], [True, False], [False, False], [False, True]]
  prev_actions, env_outputs = _inputs(rng, [5, 2], done)
  unrolled, unrolled_state = net(prev_actions, env_outputs, state, unroll=True)
  assert unrolled.policy_logits.shape == [5, 2, NUM_ACTIONS]
  for t in range(5):
    step, state = net(prev_actions[t], tf.nest.map_structure(lambda x, t=t: x[t], env_outputs),
                      state)
    np.testing.assert_allclose(step.policy_logits, unrolled.policy_logits[t], atol=1e-5)
    np.testing.assert_allclose(step.baseline, unrolled.baseline[t], atol=1e-5)
  tf.nest.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5),
                        state, unrolled_state)


@pytest.mark.timeout(60)
def test_the_policy_sees_the_previous_frames_until_an_episode_starts():
  net = _net(stack_size=4)
  rng = np.random.RandomState(2)
  _, history = net(*_inputs(rng, [1]), net.initial_state(1))
  prev_actions, env_outputs = _inputs(rng, [1])
  with_history, _ = net(prev_actions, env_outputs, history)
  from_scratch, _ = net(prev_actions, env_outputs, net.initial_state(1))
  assert np.abs(with_history.policy_logits - from_scratch.policy_logits).max() > 1e-6
  env_outputs = env_outputs._replace(done=tf.constant([True]))
  new_episode, _ = net(prev_actions, env_outputs, history)
  from_scratch, _ = net(prev_actions, env_outputs, net.initial_state(1))
  np.testing.assert_allclose(new_episode.policy_logits, from_scratch.policy_logits, atol=1e-6)


def test_state_is_the_lstm_state_and_the_frame_stack():
  assert _net().initial_state(3) == ()
  lstm_state, frame_stack = _net(lstm_sizes=[8], stack_size=4).initial_state(3)
  assert [h.shape for h in lstm_state[0]] == [[3, 8], [3, 8]]
  assert frame_stack.shape == [3, 84 * 84] and frame_stack.dtype == tf.int32
  with pytest.raises(ValueError, match='single-channel'):
    _net(stack_size=4, observation_shape=(84, 84, 3))


@pytest.mark.timeout(60)
def test_the_on_policy_agent_is_the_network_behind_the_on_policy_learners_convention():
  distribution = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(NUM_ACTIONS))
  agents = [nature_networks.NatureOnPolicyAgent(distribution) for _ in range(2)]
  rng = np.random.RandomState(3)
  prev_actions, env_outputs = _inputs(rng, [3, 2], done=[[False] * 2, [True, False], [False] * 2])
  for agent in agents:  # Builds the variables, as the learner does with zero inputs.
    agent((prev_actions[0], tuple(tf.nest.map_structure(lambda x: x[0], env_outputs))),
          agent.initial_state(2))
  # The learner copies the training agent into the inference one variable by variable.
  first, second = agents
  assert [v.shape for v in first.variables] == [v.shape for v in second.variables]
  for target, source in zip(second.variables, first.variables):
    target.assign(source)
  with tf.GradientTape() as tape:
    outputs = [agent((prev_actions, tuple(env_outputs)), agent.initial_state(2), unroll=True,
                     is_training=True)[0] for agent in agents]
    loss = tf.reduce_sum(outputs[0].policy_logits) + tf.reduce_sum(outputs[0].baseline)
  np.testing.assert_allclose(outputs[0].policy_logits, outputs[1].policy_logits, atol=1e-6)
  assert outputs[0].policy_logits.shape == [3, 2, NUM_ACTIONS]
  gradients = tape.gradient(loss, first.trainable_variables)
  # 3 convolutions, the dense layer and the 2 heads, a kernel and a bias each.
  assert len(gradients) == 12 and all(g is not None for g in gradients)
  first.update_observation_normalization_statistics(env_outputs.observation)  # Nothing to do.


def _column_norms(kernel):
  """The norm of each output unit's weights."""
  return np.linalg.norm(np.reshape(kernel, [-1, kernel.shape[-1]]), axis=0)


@pytest.mark.timeout(60)
def test_orthogonal_initialization_scales_the_torso_the_policy_and_the_value_apart():
  net = _net(stack_size=4)
  net(*_inputs(np.random.RandomState(3), [1]), net.initial_state(1))
  for layer in list(net._convs) + [net._fc]:
    np.testing.assert_allclose(_column_norms(layer.kernel), np.sqrt(2), rtol=1e-4)
  np.testing.assert_allclose(_column_norms(net._policy_logits.kernel), 0.01, rtol=1e-4)
  np.testing.assert_allclose(_column_norms(net._baseline.kernel), 1., rtol=1e-4)
  other = _net(stack_size=4)
  other(*_inputs(np.random.RandomState(3), [1]), other.initial_state(1))
  assert not np.allclose(net._fc.kernel, other._fc.kernel)  # Each network draws its own.


@pytest.mark.timeout(60)
def test_glorot_initialization_is_keras_default_and_other_names_are_refused():
  net = _net(initialization='glorot')
  net(*_inputs(np.random.RandomState(4), [1]), net.initial_state(1))
  fan_in, fan_out = net._fc.kernel.shape
  limit = np.sqrt(6 / (fan_in + fan_out))  # Glorot uniform's bound.
  assert np.abs(net._fc.kernel).max() <= limit
  assert np.abs(net._fc.kernel).max() > 0.9 * limit
  with pytest.raises(ValueError, match="initialization must be one of .*got 'he'"):
    _net(initialization='he')
