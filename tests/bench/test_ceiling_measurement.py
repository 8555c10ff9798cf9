"""Tests of the ceiling's inference call: the learner's server's way of calling a function."""

import collections
import time

import numpy as np
import pytest
import tensorflow as tf

from bench import ceiling_measurement
from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import inference
from seed_rl.common.structures import EnvOutput

pytestmark = pytest.mark.timeout(120)

AgentOutput = collections.namedtuple('AgentOutput', 'action')


class _RecurrentAgent(agent_lib.LearnerAgent):
  """Action = observation sum + 10 x the recurrent state's first part; explore adds 1000 x env
  id; the state is a pair (an LSTM's shape), each part counting its steps."""
  name = 'RECURRENT'

  def initial_state(self, batch_size):
    return (tf.fill([batch_size], 3), tf.zeros([batch_size, 2]))

  def policy(self, prev_actions, env_outputs, agent_state):
    del prev_actions
    count, memory = agent_state
    action = tf.reduce_sum(tf.cast(env_outputs.observation, tf.int32), axis=1) + 10 * count
    return AgentOutput(action), (count + 1, memory + 1.)

  def explore(self, env_ids, agent_outputs):
    return AgentOutput(agent_outputs.action + 1000 * env_ids)


def _specs(agent_state):
  return inference.Specs(
      action=tf.TensorSpec([], tf.int32),
      env_output=EnvOutput(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.bool),
                           tf.TensorSpec([3], tf.uint8), tf.TensorSpec([], tf.bool),
                           tf.TensorSpec([], tf.int32)),
      agent_state=agent_state, agent_output=AgentOutput(tf.TensorSpec([], tf.int32)))


def test_inference_call_runs_policy_and_exploration_on_a_synthetic_batch():
  agent = _RecurrentAgent(config=None)
  specs = _specs((tf.TensorSpec([], tf.int32), tf.TensorSpec([2], tf.float32)))
  infer = ceiling_measurement._inference_call(agent, specs, rows=4, device='/cpu:0')
  action, count, memory = infer()
  observations = ceiling_measurement.synthetic_batch(specs.env_output, 4).observation.numpy()
  expected = observations.sum(axis=1).astype(np.int32) + 30 + 1000 * np.arange(4)
  np.testing.assert_array_equal(action, expected)
  np.testing.assert_array_equal(count, [4] * 4)
  np.testing.assert_array_equal(memory, np.ones([4, 2]))
  # The inputs stay the same: the same batch is timed on every call.
  np.testing.assert_array_equal(infer()[0], expected)


def test_inference_call_takes_an_agent_without_recurrent_state():
  class _Feedforward(_RecurrentAgent):

    def initial_state(self, batch_size):
      return ()

    def policy(self, prev_actions, env_outputs, agent_state):
      return AgentOutput(tf.cast(env_outputs.observation[:, 0], tf.int32)), ()

  agent = _Feedforward(config=None)
  infer = ceiling_measurement._inference_call(agent, _specs(()), rows=2, device='/cpu:0')
  outputs = infer()
  assert len(outputs) == 1 and outputs[0].shape == (2,)
  assert outputs[0].dtype == np.int32


def test_call_costs_are_means_over_the_timed_calls_after_an_untimed_one():
  calls = []

  def busy():
    calls.append(None)
    start = time.process_time()
    while time.process_time() - start < 0.002:  # 2 ms of this thread's CPU.
      pass

  cost = ceiling_measurement.time_call_costs(busy, 0.05)
  assert len(calls) >= 3  # One untimed call, then at least two timed ones.
  assert 0.002 <= cost.cpu_secs <= cost.wall_secs * 2 + 0.001
  assert cost.wall_secs >= 0.002
  assert ceiling_measurement.time_calls(busy, 0.01) >= 0.002
