"""Tests of the runtime's checkpoints and of the policy every agent exports."""

import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.r2d2 import learner as r2d2_learner
from seed_rl.agents.sac import learner as sac_learner
from seed_rl.agents.sac import networks as sac_networks
from seed_rl.agents.vtrace import learner as vtrace_learner
from seed_rl.agents.vtrace import networks as vtrace_networks
from seed_rl.common import specs
from seed_rl.common.learner_runtime import checkpoints
from seed_rl.common.learner_runtime import runtime
from seed_rl.environments.gym import env as gym_env
from seed_rl.environments.gym import networks as gym_networks

pytestmark = pytest.mark.timeout(120)


def _config(logdir, **overrides):
  values = dict(logdir=str(logdir), init_checkpoint=None, save_checkpoint_secs=3600,
                checkpoints_to_keep=3)
  values.update(overrides)
  return types.SimpleNamespace(**values)


class _Model(tf.Module):

  def __init__(self, value):
    super().__init__()
    self.weight = tf.Variable(value)
    self.iterations = tf.Variable(0, dtype=tf.int64)


def _checkpointer(model, config):
  policy = lambda a, e, s: (a, s)
  export = checkpoints.PolicyExport(model, policy, policy, lambda n: tf.zeros([n]),
                                    _export_specs())
  return checkpoints.Checkpointer({'model': model}, export, model.iterations, config)


def _export_specs():
  return types.SimpleNamespace(action=tf.TensorSpec([], tf.int32),
                               env_output=tf.TensorSpec([2], tf.float32),
                               agent_state=tf.TensorSpec([], tf.float32))


def test_checkpoint_continuity_across_restarts(tmp_path):
  first = _Model(1.)
  checkpointer = _checkpointer(first, _config(tmp_path))
  assert (tmp_path / 'checkpoint').exists() is False
  checkpointer.maybe_save()  # A fresh learner saves at once.
  first.weight.assign(5.)
  first.iterations.assign(3)
  checkpointer.save()
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('ckpt-3')
  assert (tmp_path / 'saved_model' / 'saved_model.pb').exists()

  second = _Model(0.)
  resumed = _checkpointer(second, _config(tmp_path))
  assert second.weight.numpy() == 5. and second.iterations.numpy() == 3
  resumed.maybe_save()  # A resumed learner waits a whole period before its next save.
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('ckpt-3')


def test_init_checkpoint_is_used_only_when_the_logdir_has_none(tmp_path):
  source = _Model(7.)
  source.iterations.assign(2)
  _checkpointer(source, _config(tmp_path / 'source')).save()
  init = tf.train.latest_checkpoint(str(tmp_path / 'source'))

  started = _Model(0.)
  _checkpointer(started, _config(tmp_path / 'run', init_checkpoint=init))
  assert started.weight.numpy() == 7.
  started.weight.assign(9.)
  _checkpointer(started, _config(tmp_path / 'run')).save()

  restarted = _Model(0.)
  _checkpointer(restarted, _config(tmp_path / 'run', init_checkpoint=init))
  assert restarted.weight.numpy() == 9.


def test_an_unreadable_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog):
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(tmp_path))
  for iteration, weight in ((1, 2.), (2, 3.)):
    model.weight.assign(weight)
    model.iterations.assign(iteration)
    checkpointer.save()
  latest = tf.train.latest_checkpoint(str(tmp_path))
  data = tf.io.gfile.glob(latest + '.data-*')[0]
  with open(data, 'r+b') as f:  # A copy cut short.
    f.truncate(4)

  restored = _Model(0.)
  caplog.set_level('INFO')
  _checkpointer(restored, _config(tmp_path))
  assert restored.weight.numpy() == 2. and restored.iterations.numpy() == 1
  warnings = [r.getMessage() for r in caplog.records if 'cannot be restored' in r.getMessage()]
  assert len(warnings) == 1 and latest in warnings[0] and '\n' not in warnings[0]


def test_checkpoints_to_keep_keeps_that_many(tmp_path):
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(tmp_path, checkpoints_to_keep=2))
  for iteration in range(1, 5):
    model.iterations.assign(iteration)
    checkpointer.save()
  kept = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
  assert [path.rsplit('-', 1)[1] for path in kept] == ['3', '4']


def _cartpole_agent(agent):
  config = types.SimpleNamespace(env_name='CartPole-v1')
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  return runtime.create_agent(agent, gym_env.create_environment, strategy, config)


def _vtrace_agent():
  config = types.SimpleNamespace(entropy_cost=0.01, entropy_cost_adjustment_speed=10.,
                                 num_eval_envs=0)
  return vtrace_learner.VTraceAgent(
      lambda unused_action_space, unused_observation_space, dist: vtrace_networks.MLPandLSTM(
          dist, mlp_sizes=[8], lstm_sizes=[4]), config)


def _r2d2_agent():
  config = types.SimpleNamespace(burn_in=2, clip_norm=40., n_steps=3,
                                 value_function_rescaling_epsilon=1e-3)
  return r2d2_learner.R2D2Agent(
      lambda unused_specs, num_actions: gym_networks.RecurrentQNetwork(num_actions, [8], 4),
      config)


def _sac_agent():
  config = types.SimpleNamespace(entropy_cost=0.01, entropy_cost_adjustment_speed=1.,
                                 her_window_length=None, unroll_length=1)
  return sac_learner.SACAgent(
      lambda unused_action_space, unused_observation_space, dist: sac_networks.ActorCriticMLP(
          dist, n_critics=2, mlp_sizes=[8]), gym_env.create_environment, config)


@pytest.mark.parametrize('make_agent', [_vtrace_agent, _r2d2_agent, _sac_agent])
def test_every_agent_exports_a_policy_that_runs_without_the_learner(tmp_path, make_agent):
  agent = make_agent()
  agent_specs = _cartpole_agent(agent)
  export = checkpoints.PolicyExport(agent.network, agent.policy, agent.greedy_policy,
                                    agent.initial_state, agent_specs)
  tf.saved_model.save(export, str(tmp_path / 'saved_model'))
  loaded = tf.saved_model.load(str(tmp_path / 'saved_model'))

  batch = 3
  env_outputs = specs.zeros_for(agent_specs.env_output, batch)
  env_outputs = env_outputs._replace(
      observation=tf.constant(np.random.RandomState(0).randn(batch, 4), tf.float32))
  prev_actions = tf.constant([0, 1, 0], agent_specs.action.dtype)
  state = loaded.initial_state(batch)
  outputs, new_state = loaded.get_action(prev_actions, env_outputs, state)
  expected_outputs, expected_state = agent.policy(prev_actions, env_outputs,
                                                  agent.initial_state(batch))
  assert outputs[0].shape == [batch] and outputs[0].dtype == agent_specs.action.dtype
  assert np.all((outputs[0].numpy() >= 0) & (outputs[0].numpy() < 2))
  # Everything but the (sampled) V-trace and SAC action is deterministic.
  for got, expected in zip(tf.nest.flatten((outputs[1:], new_state)),
                           tf.nest.flatten((expected_outputs[1:], expected_state))):
    np.testing.assert_allclose(got, expected, rtol=1e-5)
  assert gymnasium.spaces.Discrete(2).contains(int(outputs[0][0]))
  # The greedy policy is deterministic, action included, and the same as the agent's.
  greedy, _ = loaded.get_greedy_action(prev_actions, env_outputs, state)
  expected_greedy, _ = agent.greedy_policy(prev_actions, env_outputs, agent.initial_state(batch))
  for got, expected in zip(tf.nest.flatten(greedy), tf.nest.flatten(expected_greedy)):
    np.testing.assert_allclose(got, expected, rtol=1e-5)
