"""Reference values of the R2D2 learner's pure functions, as the original's tests fix them."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.r2d2 import config as config_lib
from seed_rl.agents.r2d2 import learner
from seed_rl.agents.r2d2 import learning
from seed_rl.common import utils

pytestmark = pytest.mark.timeout(120)


def test_value_function_rescaling_values_and_inverse():
  np.testing.assert_allclose(learning.value_function_rescaling(tf.constant([0., 3., -3.])),
                             [0., 1.003, -1.003], atol=1e-6)
  assert learning.value_function_rescaling(tf.constant(0.)).numpy() == 0.
  assert learning.value_function_rescaling(tf.constant(1000.)).numpy() > 10.
  assert learning.value_function_rescaling(tf.constant(-1000.)).numpy() < -10.
  x = tf.linspace(-100., 100., 2001)
  np.testing.assert_allclose(
      learning.inverse_value_function_rescaling(learning.value_function_rescaling(x)), x,
      atol=2e-4)


def _targets(rewards, done, q, n, abandoned=None):
  column = lambda values: tf.constant(np.array(values, np.float32)[:, None])
  if abandoned is not None:
    abandoned = tf.constant(np.array(abandoned, bool)[:, None])
  return learning.n_step_bellman_target(column(rewards), column(done), column(q), 0.9, n,
                                        abandoned)[:, 0].numpy()


def test_n_step_bellman_target_reference_values():
  np.testing.assert_allclose(_targets([1, 2, 3], [0, 0, 0], [100, 200, 300], 1),
                             [91, 182, 273], rtol=1e-6)
  np.testing.assert_allclose(_targets([1, 2, 3], [0, 1, 0], [100, 200, 300], 1),
                             [91, 2, 273], rtol=1e-6)
  np.testing.assert_allclose(
      _targets([1, 2, 3], [0, 0, 0], [100, 200, 300], 2),
      [1 + .9 * 2 + .81 * 200, 2 + .9 * 3 + .81 * 300, 3 + .9 * 300], rtol=1e-6)
  np.testing.assert_allclose(
      _targets([1, 2, 3, 4, 5, 6, 7], [0, 0, 0, 1, 0, 0, 0], [100, 200, 300, 400, 500, 600, 700],
               3),
      [1 + .9 * 2 + .81 * 3 + .729 * 300, 2 + .9 * 3 + .81 * 4, 3 + .9 * 4, 4,
       5 + .9 * 6 + .81 * 7 + .729 * 700, 6 + .9 * 7 + .81 * 700, 7 + .9 * 700], rtol=1e-6)


def test_an_abandoned_episode_end_bootstraps_from_the_last_value_before_it():
  rewards, q = [1, 2, 3, 4, 5, 6, 7], [100, 200, 300, 400, 500, 600, 700]
  done = [0, 0, 0, 1, 0, 0, 0]
  # The transition into index 3 was cut by a time limit: rewards up to index 2, then the value
  # at index 2 (index 3 is the new episode's first step); index 3's own target is masked.
  np.testing.assert_allclose(
      _targets(rewards, done, q, 3, abandoned=[0, 0, 0, 1, 0, 0, 0])[[0, 1, 2, 4, 5, 6]],
      [1 + .9 * 2 + .81 * 3 + .729 * 300, 2 + .9 * 3 + .81 * 300, 3 + .9 * 300,
       5 + .9 * 6 + .81 * 7 + .729 * 700, 6 + .9 * 7 + .81 * 700, 7 + .9 * 700], rtol=1e-6)
  # Abandoned without done is not an episode end; a terminal end is unchanged.
  np.testing.assert_allclose(_targets(rewards, [0] * 7, q, 3, abandoned=[0, 0, 1, 0, 0, 0, 0]),
                             _targets(rewards, [0] * 7, q, 3), rtol=1e-6)
  np.testing.assert_allclose(_targets(rewards, done, q, 3, abandoned=[0] * 7),
                             _targets(rewards, done, q, 3), rtol=1e-6)


def test_the_step_before_an_abandoned_end_has_no_td_error_nor_priority():
  # Steps 0..3 (the last only bootstraps), q = 0, n = 1: TD errors = h(rewards of 1..3); the
  # episode was abandoned on the transition into step 2, so step 1 learns nothing.
  q_values = tf.zeros([4, 1, 2])
  outputs = AgentOutput(tf.zeros([4, 1], tf.int32), q_values)
  flags = tf.constant([[False], [False], [True], [False]])
  env_outputs = utils.EnvOutput(tf.constant([[0.], [3.], [50.], [8.]]), flags,
                                tf.zeros([4, 1, 1]), flags, tf.zeros([4, 1], tf.int32))
  loss, priorities = learning.compute_loss_and_priorities_from_agent_outputs(
      outputs, outputs, env_outputs, outputs, 0.9, eta=0.9, n_steps=1)
  td = learning.value_function_rescaling(tf.constant([3., 8.])).numpy()
  np.testing.assert_allclose(priorities, [0.9 * td.max() + 0.1 * td.mean()], rtol=1e-5)
  np.testing.assert_allclose(loss, [0.5 * np.sum(td**2)], rtol=1e-5)


def test_envs_epsilon_endpoints():
  epsilons = learning.get_envs_epsilon(tf.constant([0, 9, 10, 11]), 10, 2, 1e-3).numpy()
  np.testing.assert_allclose(epsilons, [0.4, 0.4**8, 1e-3, 1e-3], rtol=1e-5)
  # --exploration_epsilon and --exploration_alpha move both ends.
  epsilons = learning.get_envs_epsilon(tf.constant([0, 4, 5]), 5, 1, 1e-3, epsilon=0.1,
                                       alpha=3.).numpy()
  np.testing.assert_allclose(epsilons, [0.1, 0.1**4, 1e-3], rtol=1e-5)


def test_epsilon_greedy_rate_and_greedy_actions_kept():
  tf.random.set_seed(0)
  n = 20000
  actions = tf.fill([n], 7)
  env0 = learning.apply_epsilon_greedy(actions, tf.zeros([n], tf.int32), 10, 0, 1e-3, 5).numpy()
  # Epsilon 0.4 for env 0; a random action in [0, 5) never equals the greedy 7.
  assert abs(np.mean(env0 != 7) - 0.4) < 0.02
  assert set(env0[env0 != 7]) == {0, 1, 2, 3, 4}
  last = learning.apply_epsilon_greedy(actions, tf.fill([n], 9), 10, 0, 1e-3, 5).numpy()
  assert np.mean(last != 7) < 0.002


def test_insertion_batch_size_and_training_envs():
  config = config_lib.R2D2Config(batch_size=64, replay_ratio=1.5, num_training_tpus=2,
                                 num_envs=10, num_eval_envs=3)
  assert learner.get_replay_insertion_batch_size(config=config) == 42
  assert learner.get_replay_insertion_batch_size(per_replica=True, config=config) == 21
  assert learner.get_num_training_envs(config) == 7
  assert learner.is_training_env(6, config) and not learner.is_training_env(7, config)


AgentOutput = collections.namedtuple('AgentOutput', 'action q_values')


class _TinyRecurrentQ(tf.keras.Model):
  """A small recurrent Q-network with the R2D2 calling convention."""

  def __init__(self, num_actions):
    super().__init__()
    self._cell = tf.keras.layers.SimpleRNNCell(8)
    self._q = tf.keras.layers.Dense(num_actions)

  def initial_state(self, batch_size):
    return tf.zeros([batch_size, 8])

  def call(self, inputs, state, unroll=False):
    _, env_outputs = inputs
    observations = env_outputs.observation if unroll else env_outputs.observation[tf.newaxis]
    outputs = []
    for observation in tf.unstack(observations):
      output, [state] = self._cell(observation, [state])
      outputs.append(self._q(output))
    q_values = tf.stack(outputs) if unroll else outputs[0]
    return AgentOutput(tf.argmax(q_values, -1, output_type=tf.int32), q_values), state


def test_loss_with_burn_in_gives_finite_loss_priorities_and_gradients():
  time_steps, batch, burn_in = 12, 3, 5
  rng = np.random.RandomState(0)
  env_outputs = utils.EnvOutput(
      reward=tf.constant(rng.randn(time_steps, batch), tf.float32),
      done=tf.constant(rng.rand(time_steps, batch) < 0.1),
      observation=tf.constant(rng.randn(time_steps, batch, 4), tf.float32),
      abandoned=tf.zeros([time_steps, batch], tf.bool),
      episode_step=tf.zeros([time_steps, batch], tf.int32))
  prev_actions = tf.zeros([time_steps, batch], tf.int32)
  agent_outputs = AgentOutput(tf.constant(rng.randint(0, 2, [time_steps, batch]), tf.int32),
                              tf.zeros([time_steps, batch, 2]))
  online, target = _TinyRecurrentQ(2), _TinyRecurrentQ(2)
  for network in (online, target):  # Build the variables, as the learner does.
    network((prev_actions, env_outputs), network.initial_state(batch), unroll=True)
  with tf.GradientTape(persistent=True) as tape:
    loss, priorities = learning.compute_loss_and_priorities(
        online, target, online.initial_state(batch), prev_actions, env_outputs, agent_outputs,
        0.99, burn_in)
    mean_loss = tf.reduce_mean(loss)
  assert loss.shape == [batch] and priorities.shape == [batch]
  assert np.all(np.isfinite(loss)) and np.all(priorities.numpy() > 0)
  gradients = tape.gradient(mean_loss, online.trainable_variables)
  assert all(g is not None and np.all(np.isfinite(g)) for g in gradients)
  # No gradient reaches the target network.
  assert all(g is None for g in tape.gradient(mean_loss, target.trainable_variables))


def test_priorities_mix_max_and_mean_td_error():
  # One unroll of 3 steps, q = 0 everywhere, n = 1, gamma irrelevant: TD errors = h(rewards).
  q_values = tf.zeros([3, 1, 2])
  outputs = AgentOutput(tf.zeros([3, 1], tf.int32), q_values)
  env_outputs = utils.EnvOutput(tf.constant([[0.], [3.], [8.]]), tf.zeros([3, 1], tf.bool),
                                tf.zeros([3, 1, 1]), tf.zeros([3, 1], tf.bool),
                                tf.zeros([3, 1], tf.int32))
  loss, priorities = learning.compute_loss_and_priorities_from_agent_outputs(
      outputs, outputs, env_outputs, outputs, 0.9, eta=0.9, n_steps=1)
  td = learning.value_function_rescaling(tf.constant([3., 8.])).numpy()
  np.testing.assert_allclose(priorities, [0.9 * td.max() + 0.1 * td.mean()], rtol=1e-5)
  np.testing.assert_allclose(loss, [0.5 * np.sum(td**2)], rtol=1e-5)


def test_the_original_names_stay_importable_from_the_learner_module():
  for name in ('value_function_rescaling', 'inverse_value_function_rescaling',
               'n_step_bellman_target', 'get_envs_epsilon', 'apply_epsilon_greedy',
               'compute_loss_and_priorities', 'compute_loss_and_priorities_from_agent_outputs'):
    assert getattr(learner, name) is getattr(learning, name)
