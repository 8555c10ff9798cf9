"""A new agent plugged into the learner runtime, trained in-process against a real gRPC actor.

`A2CAgent` is the "Bring your own agent" example of docs/agents.md (tests/test_docs_agents.py
checks that the two are the same).
"""

import dataclasses
import pathlib
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import saved_model_pb2

from seed_rl import grpc
from seed_rl.agents.vtrace import networks
from seed_rl.common import env_wrappers
from seed_rl.common import learner_runtime
from seed_rl.common import parametric_distribution
from seed_rl.common.config.learner_config import LearnerConfig
from seed_rl.common.learner_runtime import precision
from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import tensors
from seed_rl.environments.gym import env as gym_env
from seed_rl.environments.gym.env_config import GymConfig
from tests.common.summaries import read_scalars

pytestmark = pytest.mark.timeout(240)


def a2c_loss(distribution, network, unrolls, discounting):
  """Advantage actor-critic loss of batch-major unrolls (on-policy: no correction)."""
  agent_state = unrolls.agent_state
  unrolls = tensors.make_time_major(unrolls._replace(agent_state=()))
  outputs, _ = network(unrolls.prev_actions, unrolls.env_outputs, agent_state, unroll=True)
  values, bootstrap = outputs.baseline[:-1], outputs.baseline[-1]
  discounts = tf.cast(~unrolls.env_outputs.done[1:], tf.float32) * discounting
  returns = tf.scan(lambda future, step: step[0] + step[1] * future,
                    (unrolls.env_outputs.reward[1:], discounts), bootstrap, reverse=True)
  advantages = tf.stop_gradient(returns) - values
  policy = distribution(outputs.policy_logits[:-1])
  log_probs = policy.log_prob(unrolls.agent_outputs.action[:-1])
  policy_loss = -tf.reduce_mean(log_probs * tf.stop_gradient(advantages))
  value_loss = 0.5 * tf.reduce_mean(tf.square(advantages))
  entropy = tf.reduce_mean(policy.entropy())
  loss = policy_loss + value_loss - 0.01 * entropy
  return loss, {'losses/policy': policy_loss, 'losses/value': value_loss,
                'policy/entropy': entropy}


class A2CAgent(learner_runtime.LearnerAgent):
  """Advantage actor-critic: sampled actions, one step per `batch_size` queued unrolls."""
  name = 'A2C'

  def create_networks(self, action_space, observation_space, env_output_specs):
    self.distribution = (
        parametric_distribution.get_parametric_distribution_for_action_space(action_space))
    self.network = networks.MLPandLSTM(self.distribution, mlp_sizes=[32])

  def policy(self, prev_actions, env_outputs, agent_state):
    return self.network(prev_actions, env_outputs, agent_state)

  def training_step(self, minimize, iteration):
    minimize(self.unroll_queue.dequeue_many(self.config.batch_size))

  def compute_loss(self, unrolls):
    return a2c_loss(self.distribution, self.network, unrolls, self.config.discounting)


@dataclasses.dataclass(frozen=True)
class A2CConfig(LearnerConfig, GymConfig):
  """The runtime's fields and the environment's (`GymConfig`'s), which `create_env_fn` reads
  from the config itself (a config made in code has no flags)."""


def _config(tmp_path, **overrides):
  values = dict(
      logdir=str(tmp_path / 'logdir'), server_address=f'unix:{tmp_path}/learner.sock',
      num_envs=4, env_batch_size=4, inference_batch_size=4, batch_size=2, unroll_length=10,
      unroll_queue_max_size=4, total_environment_frames=800, save_checkpoint_secs=3600, seed=1)
  values.update(overrides)
  return A2CConfig(**values)


def _act(config, ended):
  """Steps the environments through the learner until it says that training finished, which
  goes to `ended`."""
  client = grpc.Client(config.server_address)
  env = env_wrappers.BatchedEnvironment(gym_env.create_environment, config.env_batch_size, 0,
                                        config)
  n = config.env_batch_size
  env_ids, run_ids = np.arange(n, dtype=np.int32), np.arange(1, n + 1, dtype=np.int64)
  observation, reward, done = env.reset(), np.zeros(n, np.float32), np.zeros(n, bool)
  try:
    while True:
      env_output = EnvOutput(reward, done, observation, np.zeros(n, bool), np.zeros(n, np.int32))
      try:
        action = client.inference(env_ids, run_ids, env_output, reward)
      except grpc.TrainingFinishedError as e:
        ended.append(e)
        return
      observation, reward, done, _ = env.step(action)
      observation = env.reset_if_done(done)
  finally:
    env.close()
    client.close()


def _create_optimizer(unused_final_iteration):
  return tf.keras.optimizers.Adam(1e-3), lambda iteration: 1e-3


def test_a_new_agent_trains_through_the_runtime(tmp_path):
  config = _config(tmp_path)
  learner = threading.Thread(target=learner_runtime.run, daemon=True, args=(
      A2CAgent(config), gym_env.create_environment, _create_optimizer, config))
  learner.start()
  ended = []
  actor = threading.Thread(target=_act, args=(config, ended), daemon=True)
  actor.start()
  learner.join(180)
  actor.join(30)
  assert not learner.is_alive() and not actor.is_alive()
  assert len(ended) == 1  # At the end of the budget, the actor heard that training finished.
  # 800 frames in iterations of 2 unrolls of 10 steps: 40 iterations, then a final checkpoint.
  assert tf.train.latest_checkpoint(config.logdir).endswith('ckpt-40')
  exported = tf.saved_model.load(f'{config.logdir}/saved_model')
  assert exported.initial_state(2) == ()
  deadline = time.time() + 10
  while 'losses/value' not in read_scalars(config.logdir) and time.time() < deadline:
    time.sleep(0.2)
  scalars = read_scalars(config.logdir)
  assert {'losses/policy', 'losses/value', 'policy/entropy', 'gradient_norm_before_clip',
          'learning_rate', 'episode_return', 'timing/training_step_secs',
          'timing/minimize_secs', 'policy_lag/first_step_mean', 'policy_lag/first_step_max',
          'policy_lag/last_step_mean'} <= set(scalars)
  # Iterations between acting and training: none negative, the first step the oldest.
  for (_, first), (_, last) in zip(scalars['policy_lag/first_step_mean'],
                                   scalars['policy_lag/last_step_mean']):
    assert first >= last >= 0
  assert [step for step, _ in scalars['timing/minimize_secs']] == [400, 800]
  assert all(np.isfinite(value) for _, value in scalars['losses/value'])


@pytest.mark.skipif(not precision.cpu_has_native_bfloat16(),
                    reason='--mixed_precision=auto keeps float32 on a CPU without bfloat16')
def test_mixed_precision_trains_in_bfloat16_and_keeps_float32_variables(tmp_path):
  config = _config(tmp_path, mixed_precision='auto', total_environment_frames=200)
  try:
    learner = threading.Thread(target=learner_runtime.run, daemon=True, args=(
        A2CAgent(config), gym_env.create_environment, _create_optimizer, config))
    learner.start()
    actor = threading.Thread(target=_act, args=(config, []), daemon=True)
    actor.start()
    learner.join(180)
    actor.join(30)
    assert not learner.is_alive() and not actor.is_alive()
    # The learner set TensorFlow's rewrite for the functions it ran (test_precision.py shows
    # what the rewrite computes).
    assert tf.config.optimizer.get_experimental_options()[
        'auto_mixed_precision_onednn_bfloat16']
  finally:
    precision.apply('off', 'CPU')
  checkpoint = tf.train.latest_checkpoint(config.logdir)
  assert checkpoint.endswith('ckpt-10')
  weights = [tf.train.load_variable(checkpoint, name)
             for name, _ in tf.train.list_variables(checkpoint) if name.startswith('agent/')]
  assert weights and all(w.dtype == np.float32 and np.isfinite(w).all() for w in weights)
  # The exported policy holds the graphs as traced: no op of it computes in bfloat16.
  saved_model = saved_model_pb2.SavedModel.FromString(
      (pathlib.Path(config.logdir) / 'saved_model' / 'saved_model.pb').read_bytes())
  graph = saved_model.meta_graphs[0].graph_def
  nodes = list(graph.node) + [node for f in graph.library.function for node in f.node_def]
  assert nodes and not [node.name for node in nodes for value in node.attr.values()
                        if types_pb2.DT_BFLOAT16 in [value.type, *value.list.type]]
  deadline = time.time() + 10
  while 'losses/value' not in read_scalars(config.logdir) and time.time() < deadline:
    time.sleep(0.2)
  assert all(np.isfinite(value) for _, value in read_scalars(config.logdir)['losses/value'])
