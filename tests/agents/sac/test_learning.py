"""SAC's `compute_loss` against an independent numpy reference of its definition.

The loss samples actions inside, so the reference runs on a deterministic fake: a diagonal
Gaussian-like action distribution whose `sample()` is `loc + scale * noise` with a fixed noise
tensor (step t of any unroll uses noise[t]), and fake agents whose policy parameters, V and Q are
closed forms of the observation, the previous action, the agent state and the action (each Q is
quadratic in the action, so dQ/da is analytic). numpy recomputes every loss term, metric and the
actor loss's gradient (through the action when the distribution is reparametrizable, through the
log-probability otherwise). The real tanh-normal distribution and `ActorCriticMLP` are then
checked for finite gradients reaching exactly the variables they should.
"""

import itertools
import math
import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.sac import learning
from seed_rl.agents.sac import networks
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import entropy_cost as entropy_cost_lib

pytestmark = pytest.mark.timeout(120)

T, B, OBS_DIM, GOAL_DIM, A, N_CRITICS = 5, 3, 3, 2, 2, 2
ALPHA = 0.3
DISCOUNTING = 0.9
TARGET_ENTROPY = -1.5
_LOG_2PI = math.log(2. * math.pi)
NOISE = np.random.RandomState(11).randn(T + 1, B, A).astype(np.float32)


class FakeDistribution:
  """Gaussian `loc + scale * NOISE[t]` samples; diagonal Gaussian entropy and log-density."""

  def __init__(self, loc, raw_scale, reparametrizable, with_scale):
    self._loc = loc
    self._raw_scale = raw_scale
    self._reparametrizable = reparametrizable
    if with_scale:
      self.scale = tf.exp(raw_scale)

  def sample(self):
    noise = tf.constant(NOISE[:self._loc.shape[0]])
    action = self._loc + tf.exp(self._raw_scale) * noise
    return action if self._reparametrizable else tf.stop_gradient(action)

  def entropy(self):
    return tf.reduce_sum(0.5 * (_LOG_2PI + 1.) + self._raw_scale, axis=-1)

  def log_prob(self, action):
    z = (action - self._loc) * tf.exp(-self._raw_scale)
    return tf.reduce_sum(-0.5 * tf.square(z) - self._raw_scale - 0.5 * _LOG_2PI, axis=-1)


class FakeParametricDistribution:
  """`param_size` = 2A: the means, then the log-scales."""

  param_size = 2 * A

  def __init__(self, reparametrizable, with_scale=True):
    self.reparametrizable = reparametrizable
    self._with_scale = with_scale

  def __call__(self, params):
    loc, raw_scale = tf.split(params, 2, axis=-1)
    return FakeDistribution(loc, raw_scale, self.reparametrizable, self._with_scale)


def _weights(seed, feature_dim):
  rng = np.random.RandomState(seed)
  f = lambda *shape: rng.randn(*shape).astype(np.float32)
  return dict(
      w_loc=0.5 * f(feature_dim, A), p_loc=0.5 * f(A, A),
      w_scale=0.2 * f(feature_dim, A),
      w_v=f(feature_dim), u_v=f(A), s_v=np.float32(0.7), b_v=np.float32(0.2),
      w_q=f(N_CRITICS, feature_dim), b_q=f(N_CRITICS),
      c_q=f(N_CRITICS, A), h_q=rng.uniform(0.5, 2., (N_CRITICS, A)).astype(np.float32))


def _features(observation):
  if isinstance(observation, dict):
    return tf.concat([observation['observation'], observation['desired_goal']], axis=-1)
  return observation


class FakeAgent(tf.Module):
  """Closed-form SAC networks of `x` = observation (with the goal of a dict observation):

  params = [x W_loc + prev_action P_loc, x W_scale]; V = x.w_v + prev_action.u_v
  + s_v * agent_state + b_v; Q_k = x.w_q[k] + b_q[k] + sum_j (c_q[k,j] a_j - h_q[k,j] a_j^2 / 2).
  """

  def __init__(self, weights, name):
    super().__init__(name=name)
    self.policy_vars = {k: tf.Variable(weights[k], name=k) for k in ('w_loc', 'p_loc', 'w_scale')}
    self.v_vars = {k: tf.Variable(weights[k], name=k) for k in ('w_v', 'u_v', 's_v', 'b_v')}
    self.q_vars = {k: tf.Variable(weights[k], name=k) for k in ('w_q', 'b_q', 'c_q', 'h_q')}
    self.calls = 0

  def get_action_params(self, prev_actions, env_outputs, core_state, unroll=False,
                        is_training=False):
    del core_state, unroll, is_training
    x = _features(env_outputs.observation)
    p = self.policy_vars
    loc = x @ p['w_loc'] + prev_actions @ p['p_loc']
    return tf.concat([loc, x @ p['w_scale']], axis=-1)

  def get_V(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):  # pylint: disable=invalid-name
    del unroll, is_training
    x = _features(env_outputs.observation)
    v = self.v_vars
    return (tf.einsum('tbd,d->tb', x, v['w_v']) + tf.einsum('tba,a->tb', prev_actions, v['u_v'])
            + v['s_v'] * core_state[tf.newaxis] + v['b_v'])

  def get_Q(self, prev_actions, env_outputs, core_state, action, unroll=False,  # pylint: disable=invalid-name
            is_training=False):
    del prev_actions, core_state, unroll, is_training
    x = _features(env_outputs.observation)
    q = self.q_vars
    action = action[..., tf.newaxis, :]  # [T, B, 1, A] against [K, A].
    return (tf.einsum('tbd,kd->tbk', x, q['w_q']) + q['b_q'] +
            tf.reduce_sum(q['c_q'] * action - 0.5 * q['h_q'] * tf.square(action), axis=-1))

  def __call__(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
    self.calls += 1
    params = self.get_action_params(prev_actions, env_outputs, core_state, unroll, is_training)
    return tf.split(params, 2, axis=-1)[0], core_state


def _inputs(goal_env, seed=0):
  """Time-major `[T+1, B, ...]` numpy inputs; rewards reach beyond +-1, done flags in the middle."""
  rng = np.random.RandomState(seed)
  observation = rng.randn(T + 1, B, OBS_DIM).astype(np.float32)
  goal = rng.randn(T + 1, B, GOAL_DIM).astype(np.float32) if goal_env else None
  done = np.zeros((T + 1, B), bool)
  done[0, :] = True  # Dropped by the loss (belongs to the action before the unroll).
  done[2, 0] = done[3, 1] = done[4, 1] = done[T, 2] = True
  abandoned = np.zeros((T + 1, B), bool)
  abandoned[3, 1] = True  # That episode was cut short (a time limit).
  return dict(
      observation=observation, goal=goal,
      prev_actions=rng.uniform(-1., 1., (T + 1, B, A)).astype(np.float32),
      agent_state=rng.randn(B).astype(np.float32),
      reward=rng.uniform(-3., 3., (T + 1, B)).astype(np.float32),
      done=done, abandoned=abandoned,
      agent_actions=rng.uniform(-1.5, 1.5, (T + 1, B, A)).astype(np.float32))


def _tf_args(inputs):
  observation = tf.constant(inputs['observation'])
  if inputs['goal'] is not None:
    observation = {'observation': observation, 'desired_goal': tf.constant(inputs['goal'])}
  env_outputs = EnvOutput(
      reward=tf.constant(inputs['reward']), done=tf.constant(inputs['done']),
      observation=observation, abandoned=tf.constant(inputs['abandoned']),
      episode_step=tf.zeros((T + 1, B), tf.int32))
  return (tf.constant(inputs['agent_state']), tf.constant(inputs['prev_actions']), env_outputs,
          tf.constant(inputs['agent_actions']))


def _config(bootstrap_net='v', target_entropy=None, max_abs_reward=0.):
  return types.SimpleNamespace(discounting=DISCOUNTING, max_abs_reward=max_abs_reward,
                               target_entropy=target_entropy, bootstrap_net=bootstrap_net)


class _Net:
  """numpy (float64) twin of `FakeAgent`."""

  def __init__(self, weights):
    self.w = {k: np.asarray(v, np.float64) for k, v in weights.items()}

  def params(self, x, prev):
    return x @ self.w['w_loc'] + prev @ self.w['p_loc'], x @ self.w['w_scale']

  def v(self, x, prev, state):
    w = self.w
    return x @ w['w_v'] + prev @ w['u_v'] + w['s_v'] * state[None] + w['b_v']

  def q(self, x, action):
    w = self.w
    a = action[..., None, :]
    return x @ w['w_q'].T + w['b_q'] + (w['c_q'] * a - 0.5 * w['h_q'] * a ** 2).sum(-1)

  def dq_da(self, action, critic):
    """dQ_k/da at `action` `[T, B, A]` of critic indices `[T, B]`."""
    return self.w['c_q'][critic] - self.w['h_q'][critic] * action


def _numpy_loss(online, target, inputs, alpha, config, reparametrizable):
  """Every loss term, metric and the actor loss's gradient of the definition, in numpy."""
  f64 = lambda key: inputs[key].astype(np.float64)
  obs, prev, state = f64('observation'), f64('prev_actions'), f64('agent_state')
  x_target = x = obs
  if inputs['goal'] is not None:
    goal = f64('goal')
    x = np.concatenate([obs, goal], -1)
    # The bootstrapped value of step t+1 uses the goal of step t.
    x_target = np.concatenate([obs, np.concatenate([goal[:1], goal[:-1]], 0)], -1)
  noise = NOISE.astype(np.float64)
  rewards = f64('reward')[1:]
  if config.max_abs_reward:
    rewards = np.clip(rewards, -config.max_abs_reward, config.max_abs_reward)
  discounts = (~inputs['done'][1:]).astype(np.float64) * config.discounting
  n = T * B

  # Actor, on steps [:-1].
  xt, prev_t = x[:-1], prev[:-1]
  loc, raw = online.params(xt, prev_t)
  scale = np.exp(raw)
  action = loc + scale * noise[:T]
  entropy = (0.5 * (_LOG_2PI + 1.) + raw).sum(-1)
  log_prob = (-0.5 * noise[:T] ** 2 - raw - 0.5 * _LOG_2PI).sum(-1)
  v = online.v(xt, prev_t, state)
  qs = online.q(xt, action)
  min_q, argmin = qs.min(-1), qs.argmin(-1)
  actor_objective = min_q - alpha * log_prob
  if reparametrizable:
    g = online.dq_da(action, argmin)
    actor_loss = -np.mean((g * action).sum(-1)) - alpha * np.mean(entropy)
    dloss_dloc = -g / n
    dloss_draw = (-g * scale * noise[:T] - alpha) / n
  else:
    advantage = actor_objective - v
    advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-3)
    actor_loss = -np.mean(log_prob * advantage)
    # d log N(a; loc, e^raw) / d loc = (a - loc) / scale^2, / d raw = ((a - loc) / scale)^2 - 1.
    dloss_dloc = -advantage[..., None] * noise[:T] / scale / n
    dloss_draw = -advantage[..., None] * (noise[:T] ** 2 - 1.) / n
  actor_grads = {'w_loc': np.einsum('tbd,tba->da', xt, dloss_dloc),
                 'p_loc': np.einsum('tbi,tba->ia', prev_t, dloss_dloc),
                 'w_scale': np.einsum('tbd,tba->da', xt, dloss_draw)}

  v_loss = np.mean((v - actor_objective) ** 2)
  q_old = online.q(xt, f64('agent_actions')[:-1])
  if config.bootstrap_net == 'v':
    next_values = target.v(x_target, prev, state)[1:]
  else:
    next_loc, next_raw = online.params(x_target, prev)  # The ONLINE policy's actions.
    next_action = next_loc + np.exp(next_raw) * noise
    next_entropy = (0.5 * (_LOG_2PI + 1.) + next_raw).sum(-1)
    next_values = (target.q(x_target, next_action).min(-1) + alpha * next_entropy)[1:]
  target_q = rewards + discounts * next_values
  learns = ~(inputs['done'][1:] & inputs['abandoned'][1:])  # No target before a time limit.
  q_loss = np.mean(((q_old - target_q[..., None]) * learns[..., None]) ** 2)
  mean_entropy = entropy.mean()
  adjustment = (0. if config.target_entropy is None else
                alpha * (mean_entropy - config.target_entropy))
  total = actor_loss + q_loss + v_loss + adjustment
  metrics = {
      'Q/value': q_old.mean(), 'Q/L2 error': np.sqrt(q_loss),
      'V/value': v.mean(), 'V/L2 error': np.sqrt(v_loss),
      'losses/actor': actor_loss, 'losses/Q': q_loss, 'losses/V': v_loss,
      'losses/total': total,
      'policy/entropy': mean_entropy, 'policy/entropy_cost': alpha,
      'policy/std': scale.mean(),
  }
  return total, metrics, actor_grads


def _run(config, reparametrizable, goal_env=False, with_scale=True, entropy_cost=None):
  """`compute_loss` on the fakes under a tape, plus the numpy reference."""
  feature_dim = OBS_DIM + (GOAL_DIM if goal_env else 0)
  online_w, target_w = _weights(1, feature_dim), _weights(2, feature_dim)
  agent, target_agent = FakeAgent(online_w, 'online'), FakeAgent(target_w, 'target')
  inputs = _inputs(goal_env)
  dist = FakeParametricDistribution(reparametrizable, with_scale)
  if entropy_cost is None:
    entropy_cost = lambda: tf.constant(ALPHA)
  with tf.GradientTape(persistent=True) as tape:
    total, metrics = learning.compute_loss(dist, agent, target_agent, *_tf_args(inputs),
                                           entropy_cost, config)
  expected = _numpy_loss(_Net(online_w), _Net(target_w), inputs,
                         float(entropy_cost().numpy()), config, reparametrizable)
  return types.SimpleNamespace(total=total, metrics=metrics, tape=tape, agent=agent,
                               target_agent=target_agent, expected=expected)


_LOSS_CASES = [
    dict(bootstrap_net=b, reparametrizable=r, target_entropy=e, max_abs_reward=m)
    for b, r, e, m in itertools.product(('v', 'q'), (True, False), (None, TARGET_ENTROPY),
                                        (0., 1.))
] + [dict(bootstrap_net=b, reparametrizable=True, target_entropy=TARGET_ENTROPY,
          max_abs_reward=0., goal_env=True) for b in ('v', 'q')]


@pytest.mark.parametrize('case', _LOSS_CASES,
                         ids=lambda c: '-'.join(f'{k}={v}' for k, v in c.items()))
def test_loss_matches_numpy_reference(case):
  case = dict(case)
  reparametrizable = case.pop('reparametrizable')
  goal_env = case.pop('goal_env', False)
  # The non-reparametrizable fake has no `scale`: no 'policy/std' metric.
  out = _run(_config(**case), reparametrizable, goal_env=goal_env, with_scale=reparametrizable)
  expected_total, expected_metrics, _ = out.expected
  if not reparametrizable:
    assert 'policy/std' not in out.metrics
    del expected_metrics['policy/std']
  missing = set(expected_metrics) - set(out.metrics)
  assert not missing, missing
  np.testing.assert_allclose(out.total.numpy(), expected_total, rtol=1e-5, atol=1e-6)
  for name, value in expected_metrics.items():
    np.testing.assert_allclose(out.metrics[name].numpy(), value, rtol=1e-5, atol=1e-6,
                               err_msg=name)


def test_inputs_exercise_clipping_and_done():
  """The rewards reach beyond +-1 and episodes end in the middle of the unrolls."""
  inputs = _inputs(goal_env=False)
  assert np.abs(inputs['reward'][1:]).max() > 1.
  assert inputs['done'][1:-1].any()
  clipped = _numpy_loss(_Net(_weights(1, OBS_DIM)), _Net(_weights(2, OBS_DIM)), inputs, ALPHA,
                        _config(max_abs_reward=1.), True)[0]
  unclipped = _numpy_loss(_Net(_weights(1, OBS_DIM)), _Net(_weights(2, OBS_DIM)), inputs, ALPHA,
                          _config(), True)[0]
  assert abs(clipped - unclipped) > 1e-3


@pytest.mark.parametrize('reparametrizable', [True, False])
@pytest.mark.parametrize('bootstrap_net', ['v', 'q'])
def test_actor_loss_gradient_path(reparametrizable, bootstrap_net):
  """The actor loss reaches the policy only (through the action when reparametrizable, through
  log pi otherwise), with the analytic gradient; the target agent gets no gradient at all."""
  out = _run(_config(bootstrap_net, TARGET_ENTROPY), reparametrizable)
  _, _, expected_grads = out.expected
  agent, target_agent = out.agent, out.target_agent
  critic_vars = list(agent.v_vars.values()) + list(agent.q_vars.values())
  grads = out.tape.gradient(out.metrics['losses/actor'],
                            list(agent.policy_vars.values()) + critic_vars)
  for (name, _), grad in zip(agent.policy_vars.items(), grads):
    assert grad is not None, name
    np.testing.assert_allclose(grad.numpy(), expected_grads[name], rtol=1e-4, atol=1e-6,
                               err_msg=name)
  for var, grad in zip(critic_vars, grads[len(agent.policy_vars):]):
    assert grad is None, var.name
  total_grads = out.tape.gradient(out.total, target_agent.trainable_variables)
  assert all(g is None for g in total_grads)
  total_grads = out.tape.gradient(out.total, agent.trainable_variables)
  assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in total_grads)
  assert agent.calls >= 1  # The observation statistics update call.


@pytest.mark.parametrize('target_entropy', [None, TARGET_ENTROPY])
def test_entropy_cost_gradient(target_entropy):
  """d total / d param = m * alpha * (mean entropy - target) with a target entropy, else 0."""
  speed = 0.5
  cost = entropy_cost_lib.EntropyCost(initial_cost=ALPHA, adjustment_speed=speed)
  out = _run(_config('q', target_entropy), True, entropy_cost=cost)
  grad = out.tape.gradient(out.total, cost.param)
  assert grad is not None
  alpha = float(cost().numpy())
  np.testing.assert_allclose(out.metrics['policy/entropy_cost'].numpy(), alpha, rtol=1e-6)
  if target_entropy is None:
    assert grad.numpy() == 0.
  else:
    mean_entropy = out.expected[1]['policy/entropy']
    np.testing.assert_allclose(grad.numpy(), speed * alpha * (mean_entropy - target_entropy),
                               rtol=1e-5)
    assert grad.numpy() != 0.


@pytest.mark.parametrize('bootstrap_net', ['v', 'q'])
def test_real_tanh_normal_and_actor_critic_mlp(bootstrap_net):
  """Finite loss and gradients for the real networks; the actor loss reaches only the policy."""
  tf.random.set_seed(3)
  dist = parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Box(-1, 1, (2,)))
  assert dist.reparametrizable
  inputs = _inputs(goal_env=False, seed=4)
  inputs['agent_actions'] = np.tanh(inputs['agent_actions'])
  agent_state = ()
  _, prev_actions, env_outputs, agent_actions = _tf_args(inputs)
  agent = networks.ActorCriticMLP(dist, n_critics=2, mlp_sizes=[8])
  target_agent = networks.ActorCriticMLP(dist, n_critics=2, mlp_sizes=[8])
  for net in (agent, target_agent):  # Builds every variable.
    net.get_action_params(prev_actions, env_outputs, agent_state, unroll=True)
    net.get_V(prev_actions, env_outputs, agent_state, unroll=True)
    net.get_Q(prev_actions, env_outputs, agent_state, action=agent_actions, unroll=True)
  cost = entropy_cost_lib.EntropyCost(initial_cost=0.1, adjustment_speed=1.)
  config = _config(bootstrap_net, target_entropy=-2.)
  with tf.GradientTape(persistent=True) as tape:
    total, metrics = learning.compute_loss(dist, agent, target_agent, agent_state, prev_actions,
                                           env_outputs, agent_actions, cost, config)
  assert np.isfinite(total.numpy())
  assert all(np.isfinite(value.numpy()) for value in metrics.values())
  online_vars = agent.trainable_variables
  assert online_vars and target_agent.trainable_variables
  for var, grad in zip(online_vars, tape.gradient(total, online_vars)):
    assert grad is not None, var.name
    assert np.all(np.isfinite(grad.numpy())), var.name
  assert all(g is None for g in tape.gradient(total, target_agent.trainable_variables))
  assert np.isfinite(tape.gradient(total, cost.param).numpy())

  policy_vars = agent._actor.trainable_variables  # pylint: disable=protected-access
  critic_vars = [v for v in online_vars if all(v is not p for p in policy_vars)]
  assert policy_vars and critic_vars
  actor_grads = tape.gradient(metrics['losses/actor'], policy_vars + critic_vars)
  for var, grad in zip(policy_vars, actor_grads[:len(policy_vars)]):
    assert grad is not None, var.name
    assert np.all(np.isfinite(grad.numpy())), var.name
  assert any(np.any(g.numpy() != 0.) for g in actor_grads[:len(policy_vars)])
  for var, grad in zip(critic_vars, actor_grads[len(policy_vars):]):
    assert grad is None, var.name

  # 'policy/std' is the tanh-normal's base Normal scale: softplus(raw scale) + 1e-3.
  actor_inputs = tf.nest.map_structure(lambda t: t[:-1], env_outputs)
  params = agent.get_action_params(prev_actions[:-1], actor_inputs, agent_state, unroll=True)
  std = np.log1p(np.exp(params.numpy()[..., 2:].astype(np.float64))) + 1e-3
  np.testing.assert_allclose(metrics['policy/std'].numpy(), std.mean(), rtol=1e-5)
