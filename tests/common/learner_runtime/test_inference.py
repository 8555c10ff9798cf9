"""Tests of the runtime's inference step: restarts, per-env state, unrolls, eval envs."""

import collections
import threading

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.learner_runtime import inference
from seed_rl.common.learner_runtime import unroll_queue
from seed_rl.common.structures import EnvOutput

pytestmark = pytest.mark.timeout(120)

AgentOutput = collections.namedtuple('AgentOutput', 'action')


class _CountingAgent(agent_lib.LearnerAgent):
  """Its state counts the steps each env took since its (re)start; action = that count."""
  name = 'COUNTING'

  def initial_state(self, batch_size):
    return tf.zeros([batch_size], tf.int32)

  def policy(self, prev_actions, env_outputs, agent_state):
    del prev_actions, env_outputs
    return AgentOutput(agent_state + 1), agent_state + 1

  def explore(self, env_ids, agent_outputs):
    return AgentOutput(agent_outputs.action + 1000 * env_ids)


_SPECS = inference.Specs(action=tf.TensorSpec([], tf.int32),
                         env_output=EnvOutput(tf.TensorSpec([], tf.float32),
                                              tf.TensorSpec([], tf.bool),
                                              tf.TensorSpec([1], tf.float32),
                                              tf.TensorSpec([], tf.bool),
                                              tf.TensorSpec([], tf.int32)),
                         agent_state=tf.TensorSpec([], tf.int32),
                         agent_output=AgentOutput(tf.TensorSpec([], tf.int32)))


class _Learner(object):
  """The inference function of 3 envs (env 2 evaluates), batches of 2, unrolls of 2 steps."""

  def __init__(self, burn_in=0, supports_abandoned_episodes=False):
    agent = _CountingAgent(config=None)
    agent.burn_in = burn_in
    agent.supports_abandoned_episodes = supports_abandoned_episodes
    self.iterations = tf.Variable(0, dtype=tf.int64)  # The policy version.
    self.env_states = inference.EnvStates(num_envs=3, num_training_envs=2, unroll_length=2,
                                          burn_in=burn_in, specs=_SPECS,
                                          iterations=self.iterations)
    self.stats = episodes.EpisodeStats(3)
    self.queue = unroll_queue.UnrollQueue(-1, self.env_states.unroll_specs, self.iterations)
    self.inference = inference.create_inference_fn(agent, self.env_states, self.stats,
                                                   self.queue, _SPECS, batch_size=2,
                                                   num_action_repeats=1, device='/cpu:0')

  def step(self, env_ids, run_ids, rewards=(0., 0.), abandoned=(False, False)):
    env_outputs = EnvOutput(tf.constant(rewards), tf.constant(abandoned), tf.zeros([2, 1]),
                            tf.constant(abandoned), tf.zeros([2], tf.int32))
    return self.inference(tf.constant(env_ids, tf.int32), tf.constant(run_ids, tf.int64),
                          env_outputs, tf.constant(rewards)).numpy().tolist()

  def unrolls(self):
    count = int(self.queue.size())
    return self.queue.dequeue_many(count) if count else None


def test_actions_follow_per_env_state_and_exploration():
  learner = _Learner()
  assert learner.step([0, 1], [5, 6]) == [1, 1001]
  assert learner.step([0, 1], [5, 6]) == [2, 1002]
  assert learner.step([1, 2], [6, 7]) == [1003, 2001]


def test_unrolls_carry_the_state_before_their_first_step_and_share_the_boundary_step():
  learner = _Learner()
  for _ in range(5):
    learner.step([0, 1], [5, 6])
  unrolls = learner.unrolls()
  # Two unrolls per env of 3 steps (2 + bootstrap); the second starts where the first ended.
  np.testing.assert_array_equal(unrolls.agent_state, [0, 0, 2, 2])
  np.testing.assert_array_equal(unrolls.agent_outputs.action,
                                [[1, 2, 3], [1001, 1002, 1003], [3, 4, 5], [1003, 1004, 1005]])
  np.testing.assert_array_equal(unrolls.prev_actions[:2], [[0, 1, 2], [0, 1001, 1002]])


def test_unrolls_are_stamped_with_the_iterations_that_acted_them_and_lag_is_measured():
  learner = _Learner()
  for iteration in range(5):  # Training goes on while the envs act.
    learner.iterations.assign(iteration)
    learner.step([0, 1], [5, 6])
  assert learner.queue.policy_lag() == {}
  learner.iterations.assign(6)
  learner.unrolls()
  # Unroll 1 of each env was acted at iterations 0-2, unroll 2 (from the shared step) at 2-4.
  assert learner.queue.policy_lag() == {'first_step_mean': 5., 'first_step_max': 6.,
                                        'last_step_mean': 3.}


def test_burn_in_unrolls_start_from_the_state_before_their_burn_in():
  learner = _Learner(burn_in=1)
  for _ in range(7):
    learner.step([0, 1], [5, 6])
  unrolls = learner.unrolls()
  # Rows of 1 + 2 + 1 steps: the first unroll has a zero burn-in step, later ones overlap by 2.
  np.testing.assert_array_equal(unrolls.agent_outputs.action[::2],
                                [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]])
  np.testing.assert_array_equal(unrolls.agent_state[::2], [0, 1, 3])


def test_a_new_run_id_resets_the_env_and_drops_its_partial_unroll():
  learner = _Learner()
  learner.step([0, 1], [5, 6])
  learner.step([0, 1], [5, 6])
  # Env 0's actor restarted: its state, previous action and partial unroll start afresh.
  assert learner.step([0, 1], [9, 6]) == [1, 1003]
  assert learner.step([0, 1], [9, 6]) == [2, 1004]
  assert learner.step([0, 1], [9, 6]) == [3, 1005]
  unrolls = learner.unrolls()
  np.testing.assert_array_equal(unrolls.agent_outputs.action,
                                [[1001, 1002, 1003], [1, 2, 3], [1003, 1004, 1005]])
  np.testing.assert_array_equal(unrolls.prev_actions[1], [0, 1, 2])
  np.testing.assert_array_equal(unrolls.agent_state, [0, 0, 2])


def test_the_stale_row_of_a_dead_actor_is_dropped_from_a_shared_batch():
  learner = _Learner()
  learner.step([0, 1], [5, 6])
  # The dead actor's last call (run id 5) and its successor's first call (run id 8) share a
  # batch: the stale row gets action 0 and touches nothing.
  assert learner.step([0, 0], [5, 8]) == [0, 1]
  assert learner.step([0, 1], [8, 6]) == [2, 1002]


def test_evaluation_envs_act_but_never_fill_unrolls():
  learner = _Learner()
  for _ in range(6):
    learner.step([2, 0], [7, 5])
  unrolls = learner.unrolls()
  assert set(np.unique(unrolls.agent_outputs.action // 1000)) == {0}


@pytest.mark.parametrize('supported', [True, False])
def test_abandoned_episodes_reach_the_unrolls_only_of_an_agent_that_supports_them(supported):
  learner = _Learner(supports_abandoned_episodes=supported)
  for _ in range(3):
    learner.step([0, 1], [5, 6], abandoned=(True, False))
  unrolls = learner.unrolls()
  np.testing.assert_array_equal(unrolls.env_outputs.done, [[True] * 3, [False] * 3])
  np.testing.assert_array_equal(unrolls.env_outputs.abandoned,
                                [[supported] * 3, [False] * 3])


def test_concurrent_calls_for_the_same_env_ids_never_corrupt_the_unroll_store():
  learner = _Learner()
  errors = []

  def call_repeatedly():
    try:
      for _ in range(400):
        learner.step([0, 1], [5, 6])
    except Exception as e:  # pylint: disable=broad-except
      errors.append(e)

  threads = [threading.Thread(target=call_repeatedly) for _ in range(8)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join(60)
  assert not errors, errors[0]
  # Every env's unrolls still hold whole, consecutive steps.
  unrolls = learner.unrolls()
  assert unrolls.agent_outputs.action.shape[1] == 3


ValuedOutput = collections.namedtuple('ValuedOutput', 'action value')


class _OverflowingAgent(_CountingAgent):
  """Like `_CountingAgent`, with a value that overflows to Inf for rewards above 10."""

  def policy(self, prev_actions, env_outputs, agent_state):
    outputs, state = super().policy(prev_actions, env_outputs, agent_state)
    return ValuedOutput(outputs.action, env_outputs.reward * 1e38), state

  def explore(self, env_ids, agent_outputs):
    return agent_outputs


def test_a_row_with_non_finite_outputs_restarts_its_env_and_is_never_stored():
  specs = _SPECS._replace(agent_output=ValuedOutput(tf.TensorSpec([], tf.int32),
                                                    tf.TensorSpec([], tf.float32)))
  learner = _Learner()
  learner.env_states = inference.EnvStates(3, 2, 2, 0, specs, learner.iterations)
  learner.queue = unroll_queue.UnrollQueue(-1, learner.env_states.unroll_specs,
                                           learner.iterations)
  learner.inference = inference.create_inference_fn(
      _OverflowingAgent(config=None), learner.env_states, learner.stats, learner.queue, specs,
      batch_size=2, num_action_repeats=1, device='/cpu:0')
  assert learner.step([0, 1], [5, 6]) == [1, 1]
  assert learner.step([0, 1], [5, 6], rewards=(0., 1e6)) == [2, 0]  # Env 1 overflows.
  for expected in ([3, 1], [4, 2], [5, 3]):  # Env 1 starts afresh; env 0 goes on.
    assert learner.step([0, 1], [5, 6]) == expected
  unrolls = learner.unrolls()
  assert np.all(np.isfinite(unrolls.agent_outputs.value))
  np.testing.assert_array_equal(unrolls.agent_outputs.action, [[1, 2, 3], [3, 4, 5], [1, 2, 3]])
