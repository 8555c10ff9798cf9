"""The V-trace learner's loss against an independent numpy reference of its definition.

`compute_loss` is run with a tiny deterministic fake agent (linear logits and baseline of the
observation and the previous action, fixed weights) so that numpy can recompute every learner
output, the V-trace targets and advantages (IMPALA's backward recursion, written here from the
definition) and each loss term and metric.
"""

import dataclasses
import itertools

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.vtrace import config as config_lib
from seed_rl.agents.vtrace import learner
from seed_rl.agents.vtrace.networks import AgentOutput
from seed_rl.common import parametric_distribution
from seed_rl.common.learner_runtime import inference
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import training
from seed_rl.common.learner_runtime import unroll_queue
from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import tensors

pytestmark = pytest.mark.timeout(120)

T, B, OBS_DIM, NUM_ACTIONS = 6, 3, 4, 3
ENTROPY_COST = 0.05


def _weights():
  rng = np.random.RandomState(7)
  return dict(obs_logits=rng.randn(OBS_DIM, NUM_ACTIONS).astype(np.float32),
              action_logits=rng.randn(NUM_ACTIONS, NUM_ACTIONS).astype(np.float32),
              obs_value=rng.randn(OBS_DIM).astype(np.float32),
              value_bias=np.float32(0.3))


class FakeAgent(tf.Module):
  """Linear policy logits and baseline of `[observation, one_hot(prev_action)]`."""

  def __init__(self, weights):
    super().__init__(name='fake_agent')
    self.obs_logits = tf.Variable(weights['obs_logits'], name='obs_logits')
    self.action_logits = tf.Variable(weights['action_logits'], name='action_logits')
    self.obs_value = tf.Variable(weights['obs_value'], name='obs_value')
    self.value_bias = tf.Variable(weights['value_bias'], name='value_bias')
    self.calls = []

  def __call__(self, prev_actions, env_outputs, agent_state, unroll=False, is_training=False):
    self.calls.append(dict(unroll=unroll, is_training=is_training, agent_state=agent_state))
    observation = env_outputs.observation
    logits = (tf.einsum('tbd,da->tba', observation, self.obs_logits) +
              tf.einsum('tba,ac->tbc', tf.one_hot(prev_actions, NUM_ACTIONS),
                        self.action_logits))
    baseline = tf.einsum('tbd,d->tb', observation, self.obs_value) + self.value_bias
    action = tf.zeros_like(prev_actions)  # Unused by the loss.
    return AgentOutput(action, logits, baseline), agent_state


def _inputs(with_done, seed=0):
  """Time-major `[T+1, B, ...]` numpy inputs; rewards reach beyond +-1."""
  rng = np.random.RandomState(seed)
  observation = rng.randn(T + 1, B, OBS_DIM).astype(np.float32)
  prev_actions = rng.randint(0, NUM_ACTIONS, size=(T + 1, B)).astype(np.int64)
  reward = rng.uniform(-3., 3., size=(T + 1, B)).astype(np.float32)
  done = np.zeros((T + 1, B), bool)
  abandoned = np.zeros((T + 1, B), bool)
  if with_done:
    abandoned[4, 1] = True  # That episode was cut short (a time limit).
    done[0, :] = True  # Dropped by the loss (belongs to the action before the unroll).
    done[2, 0] = True
    done[4, 1] = True
    done[5, 1] = True
    done[T, 2] = True
  actions = rng.randint(0, NUM_ACTIONS, size=(T + 1, B)).astype(np.int64)
  behaviour_logits = (1.5 * rng.randn(T + 1, B, NUM_ACTIONS)).astype(np.float32)
  return dict(observation=observation, prev_actions=prev_actions, reward=reward, done=done,
              abandoned=abandoned, actions=actions, behaviour_logits=behaviour_logits)


def _log_softmax(logits):
  logits = logits - logits.max(axis=-1, keepdims=True)
  return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))


def _take(log_probs, actions):
  return np.take_along_axis(log_probs, actions[..., None], axis=-1)[..., 0]


def _numpy_vtrace(target_logp, behaviour_logp, discounts, rewards, values, bootstrap, lambda_,
                  abandoned):
  """V-trace targets and advantages by the backward recursion of IMPALA's definition; a step
  right before an abandoned episode end learns nothing (TD error and advantage 0)."""
  rhos = np.exp(target_logp - behaviour_logp)
  rho_bar = np.minimum(1., rhos)
  pg_rho = np.minimum(1., rhos)
  cs = lambda_ * np.minimum(1., rhos)
  num_steps = rewards.shape[0]
  next_values = np.concatenate([values[1:], bootstrap[None]], axis=0)
  vs = np.zeros_like(values)
  next_vs_minus_v = np.zeros_like(bootstrap)  # vs_T - V_T = 0 (V_T = bootstrap).
  for t in reversed(range(num_steps)):
    delta = rho_bar[t] * (rewards[t] + discounts[t] * next_values[t] - values[t])
    delta *= 1 - abandoned[t]
    vs[t] = values[t] + delta + discounts[t] * cs[t] * next_vs_minus_v
    next_vs_minus_v = vs[t] - values[t]
  next_vs = np.concatenate([vs[1:], bootstrap[None]], axis=0)
  pg_advantages = pg_rho * (rewards + discounts * next_vs - values) * (1 - abandoned)
  return vs, pg_advantages, rhos


def _numpy_loss(weights, inputs, entropy_cost, config):
  """All loss terms and metrics of `compute_loss`, in float64 numpy."""
  w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
  observation = inputs['observation'].astype(np.float64)
  logits = observation @ w['obs_logits'] + w['action_logits'][inputs['prev_actions']]
  baseline = observation @ w['obs_value'] + w['value_bias']
  bootstrap = baseline[-1]
  logits, values = logits[:-1], baseline[:-1]
  actions = inputs['actions'][:-1]
  behaviour_logits = inputs['behaviour_logits'][:-1].astype(np.float64)
  rewards = inputs['reward'][1:].astype(np.float64)
  done = inputs['done'][1:]
  if config.max_abs_reward:
    rewards = np.clip(rewards, -config.max_abs_reward, config.max_abs_reward)
  rewards = rewards * config.reward_scaling
  discounts = (~done).astype(np.float64) * config.discounting

  target_log_probs = _log_softmax(logits)
  target_logp = _take(target_log_probs, actions)
  behaviour_logp = _take(_log_softmax(behaviour_logits), actions)
  vs, pg_advantages, rhos = _numpy_vtrace(target_logp, behaviour_logp, discounts, rewards,
                                          values, bootstrap, config.lambda_,
                                          inputs['abandoned'][1:])

  policy_loss = -np.mean(target_logp * pg_advantages)
  v_loss = config.baseline_cost * .5 * np.mean((vs - values) ** 2)
  entropy = np.mean(-(np.exp(target_log_probs) * target_log_probs).sum(axis=-1))
  entropy_loss = -entropy_cost * entropy
  kl = behaviour_logp - target_logp
  kl_loss = config.kl_cost * np.mean(kl)
  adjustment = (0. if config.target_entropy is None else
                entropy_cost * (entropy - config.target_entropy))
  total = policy_loss + v_loss + entropy_loss + kl_loss + adjustment
  metrics = {
      'losses/policy': policy_loss,
      'losses/V': v_loss,
      'losses/entropy': entropy_loss,
      'losses/kl': kl_loss,
      'losses/total': total,
      'policy/entropy': entropy,
      'policy/kl(old|new)': np.mean(kl),
      'V/value function': np.mean(values),
      'V/L2 error': np.sqrt(np.mean((vs - values) ** 2)),
  }
  return total, metrics, dict(rhos=rhos, rewards=rewards, adjustment=adjustment, vs=vs)


def _distribution():
  return parametric_distribution.get_parametric_distribution_for_action_space(
      gymnasium.spaces.Discrete(NUM_ACTIONS))


def _tf_args(inputs):
  env_outputs = EnvOutput(
      reward=tf.constant(inputs['reward']),
      done=tf.constant(inputs['done']),
      observation=tf.constant(inputs['observation']),
      abandoned=tf.constant(inputs['abandoned']),
      episode_step=tf.zeros([T + 1, B], tf.int32))
  behaviour_baseline = tf.fill([T + 1, B], 123.)  # Must not be used: values are the learner's.
  agent_outputs = AgentOutput(tf.constant(inputs['actions']),
                              tf.constant(inputs['behaviour_logits']), behaviour_baseline)
  return tf.constant(inputs['prev_actions']), env_outputs, agent_outputs


def _config(lambda_=1., max_abs_reward=0., kl_cost=0., target_entropy=None, reward_scaling=1.):
  return config_lib.VTraceConfig(discounting=.9, lambda_=lambda_, baseline_cost=.7,
                                 kl_cost=kl_cost, max_abs_reward=max_abs_reward,
                                 target_entropy=target_entropy, reward_scaling=reward_scaling)


# The options' combinations with rewards unscaled, then scaling after clipping and without it.
_CASES = ([case + (1.,) for case in
           itertools.product([1., .5], [False, True], [0., 1.], [0., .3], [None, .6])] +
          [(.5, True, 1., 0., None, .1), (1., True, 0., .3, .6, 3.)])


@pytest.mark.parametrize('lambda_,with_done,max_abs_reward,kl_cost,target_entropy,reward_scaling',
                         _CASES)
def test_compute_loss_matches_numpy_reference(lambda_, with_done, max_abs_reward, kl_cost,
                                              target_entropy, reward_scaling):
  weights = _weights()
  inputs = _inputs(with_done)
  config = _config(lambda_, max_abs_reward, kl_cost, target_entropy, reward_scaling)
  agent = FakeAgent(weights)
  agent_state = tf.zeros([B, 2])
  prev_actions, env_outputs, agent_outputs = _tf_args(inputs)

  total, metrics = learner.compute_loss(_distribution(), agent, agent_state, prev_actions,
                                        env_outputs, agent_outputs,
                                        lambda: tf.constant(ENTROPY_COST), config)

  assert len(agent.calls) == 1
  assert agent.calls[0]['unroll'] is True and agent.calls[0]['is_training'] is True
  assert agent.calls[0]['agent_state'] is agent_state
  expected_total, expected, extra = _numpy_loss(weights, inputs, ENTROPY_COST, config)
  # The case exercises rho clipping, and reward clipping when enabled.
  assert (extra['rhos'] > 1.).any() and (extra['rhos'] < 1.).any()
  if max_abs_reward:
    assert (np.abs(inputs['reward'][1:]) > max_abs_reward).any()
  if target_entropy is not None:
    assert abs(extra['adjustment']) > 1e-4

  np.testing.assert_allclose(total.numpy(), expected_total, rtol=1e-5, atol=1e-6)
  for name, value in expected.items():
    np.testing.assert_allclose(metrics[name].numpy(), value, rtol=1e-5, atol=1e-6,
                               err_msg=name)
  np.testing.assert_allclose(metrics['policy/entropy_cost'].numpy(), ENTROPY_COST, rtol=1e-6)


def test_compute_loss_options_change_the_loss():
  """Sanity of the reference cases: each option actually moves the numpy loss."""
  weights, base = _weights(), _config()
  reference = lambda inputs, config: _numpy_loss(weights, inputs, ENTROPY_COST, config)[0]
  plain = reference(_inputs(False), base)
  for inputs, config in [(_inputs(True), base), (_inputs(False), _config(lambda_=.5)),
                         (_inputs(False), _config(max_abs_reward=1.)),
                         (_inputs(False), _config(kl_cost=.3)),
                         (_inputs(False), _config(target_entropy=.6)),
                         (_inputs(False), _config(reward_scaling=.1))]:
    assert abs(reference(inputs, config) - plain) > 1e-4


def test_compute_loss_in_tf_function_matches_eager():
  weights, inputs = _weights(), _inputs(True)
  config = _config(.5, 1., .3, .6)
  prev_actions, env_outputs, agent_outputs = _tf_args(inputs)
  agent = FakeAgent(weights)
  loss_fn = tf.function(lambda: learner.compute_loss(
      _distribution(), agent, (), prev_actions, env_outputs, agent_outputs,
      lambda: tf.constant(ENTROPY_COST), config))
  total, metrics = loss_fn()
  expected_total, expected, _ = _numpy_loss(weights, inputs, ENTROPY_COST, config)
  np.testing.assert_allclose(total.numpy(), expected_total, rtol=1e-5, atol=1e-6)
  for name, value in expected.items():
    np.testing.assert_allclose(metrics[name].numpy(), value, rtol=1e-5, atol=1e-6,
                               err_msg=name)


@pytest.mark.parametrize('target_entropy', [None, .6])
def test_gradients_flow(target_entropy):
  weights, inputs = _weights(), _inputs(True)
  config = _config(.5, 1., .3, target_entropy)
  prev_actions, env_outputs, agent_outputs = _tf_args(inputs)
  agent = FakeAgent(weights)
  entropy_cost = learner.EntropyCost(ENTROPY_COST, adjustment_speed=2.)
  variables = list(agent.trainable_variables) + [entropy_cost.param]
  with tf.GradientTape() as tape:
    total, metrics = learner.compute_loss(_distribution(), agent, (), prev_actions, env_outputs,
                                          agent_outputs, entropy_cost, config)
  *agent_gradients, param_gradient = tape.gradient(total, variables)

  assert len(agent_gradients) == 4
  for variable, gradient in zip(agent.trainable_variables, agent_gradients):
    assert gradient is not None, variable.name
    gradient = gradient.numpy()
    assert np.isfinite(gradient).all(), variable.name
    assert np.abs(gradient).max() > 1e-6, variable.name

  assert param_gradient is not None
  np.testing.assert_allclose(metrics['policy/entropy_cost'].numpy(), ENTROPY_COST, rtol=1e-5)
  if target_entropy is None:
    assert param_gradient.numpy() == 0.
  else:
    # d/dparam of exp(m * param) * (entropy - target) with the entropy held fixed.
    expected = 2. * ENTROPY_COST * (metrics['policy/entropy'].numpy() - target_entropy)
    assert abs(expected) > 1e-4
    np.testing.assert_allclose(param_gradient.numpy(), expected, rtol=1e-4)


@pytest.mark.parametrize('flag', ['epochs_per_step', 'batches_per_step'])
@pytest.mark.parametrize('value', [0, -1])
def test_steps_per_step_below_one_are_refused(flag, value):
  agent = learner.VTraceAgent(None, config_lib.VTraceConfig(**{flag: value}))
  with pytest.raises(ValueError, match=rf'--{flag} must be at least 1, got {value}\.'):
    agent.validate_config()


@pytest.mark.parametrize('batches_per_step,epochs_per_step', [(1, 1), (1, 3), (2, 2), (4, 3)])
def test_training_step_takes_every_unroll_once_per_epoch(batches_per_step, epochs_per_step):
  """A training step takes `batch_size * batches_per_step` unrolls from the queue; each epoch
  steps once on each minibatch of `batch_size` of them, every unroll in exactly one; with several
  minibatches the unrolls are shuffled (out of the queue's order in some epoch), with one they
  keep that order."""
  tf.random.set_seed(3)
  batch_size, steps = 2, 5
  agent = _agent(batch_size=batch_size, batches_per_step=batches_per_step,
                 epochs_per_step=epochs_per_step)
  agent.validate_config()
  rows = batch_size * batches_per_step
  assert agent.unrolls_per_iteration() == rows
  assert agent.optimizer_steps_per_iteration() == batches_per_step * epochs_per_step
  optimizer = tf.keras.optimizers.SGD()
  iterations = agent.iteration_counter(optimizer)
  queue = unroll_queue.UnrollQueue(-1, tf.TensorSpec([], tf.int32), iterations)
  queue.enqueue_many(tf.range(rows * steps), tf.zeros([rows * steps], tf.int64))
  agent.prepare_training(queue)
  minibatches = []

  def minimize(batch):  # The runtime's, less the loss: an optimizer step on the batch.
    minibatches.append(batch.numpy().tolist())
    optimizer.iterations.assign_add(1)

  for step in range(steps):
    agent.training_step(minimize, step)
  assert int(iterations.numpy()) == steps
  assert len(minibatches) == steps * epochs_per_step * batches_per_step
  assert all(len(minibatch) == batch_size for minibatch in minibatches)
  epochs = [sum(minibatches[i:i + batches_per_step], [])
            for i in range(0, len(minibatches), batches_per_step)]
  in_order = [list(range(rows * (i // epochs_per_step), rows * (i // epochs_per_step + 1)))
              for i in range(steps * epochs_per_step)]
  assert [sorted(epoch) for epoch in epochs] == in_order
  assert (epochs == in_order) == (batches_per_step == 1)


def _agent(**flags) -> learner.VTraceAgent:
  """A V-trace agent of the fake network with the test's loss settings and `flags`, networks
  created."""
  config = dataclasses.replace(_config(), entropy_cost=ENTROPY_COST,
                               entropy_cost_adjustment_speed=10., **flags)
  agent = learner.VTraceAgent(lambda *unused: FakeAgent(_weights()), config)
  agent.create_networks(gymnasium.spaces.Discrete(NUM_ACTIONS), None, None)
  return agent


def _minimize_with_sgd(agent: learner.VTraceAgent, learning_rate: float):
  """The runtime's `minimize` for `agent` with plain SGD, and a batch of the test's unrolls."""
  prev_actions, env_outputs, agent_outputs = _tf_args(_inputs(True))
  batch = tensors.make_time_major(inference.Unroll(tf.zeros([B, 2]), prev_actions, env_outputs,
                                                   agent_outputs))
  optimizer = tf.keras.optimizers.SGD(learning_rate)
  optimizer.build(agent.trainable_variables)
  return training.create_minimize(tf.distribute.get_strategy(), agent, optimizer,
                                  progress_logger.ProgressLogger()), batch


@pytest.mark.parametrize('clip_norm', [0., 1e-3])
def test_clip_norm_bounds_each_optimizer_step(clip_norm):
  """With `--clip_norm`, one SGD step (rate 1) moves the weights by exactly the clipped norm;
  without, by the loss's whole gradient (far larger here)."""
  agent = _agent(clip_norm=clip_norm)
  agent.validate_config()
  minimize, batch = _minimize_with_sgd(agent, 1.)
  before = [v.numpy() for v in agent.trainable_variables]
  metrics = minimize(batch)
  moved = np.sqrt(sum(np.sum((v.numpy() - b) ** 2)
                      for v, b in zip(agent.trainable_variables, before)))
  gradient_norm = float(metrics['gradient_norm_before_clip'])
  assert gradient_norm > 0.1
  np.testing.assert_allclose(moved, clip_norm or gradient_norm, rtol=1e-3)


@pytest.mark.parametrize('clip_norm', [-1., -1e-3])
def test_negative_clip_norm_is_refused(clip_norm):
  agent = learner.VTraceAgent(None, config_lib.VTraceConfig(clip_norm=clip_norm))
  with pytest.raises(ValueError, match=r'--clip_norm must be 0 \(no clipping\) or positive, '
                                       rf'got {clip_norm}\.'):
    agent.validate_config()


def _popart():
  normalizer = learner.popart.PopArt(learner.running_statistics.TwoLevelAverageMeanStd())
  normalizer.init()
  return normalizer


def test_popart_learns_values_and_advantages_in_units_of_the_targets_std():
  """With PopArt the agent's baseline means the same values at first (statistics 0 and 1), so
  V-trace's targets are unchanged; the statistics take in those targets, and the value error and
  the policy gradient's advantages are the unnormalized ones divided by their std."""
  weights, inputs = _weights(), _inputs(True)
  config = _config(.5)
  args = (_distribution(), FakeAgent(weights), (), *_tf_args(inputs),
          lambda: tf.constant(ENTROPY_COST), config)
  _, plain = learner.compute_loss(*args)
  normalizer = _popart()
  _, normalized = learner.compute_loss(*args, value_normalizer=normalizer)

  vs = _numpy_loss(weights, inputs, ENTROPY_COST, config)[2]['vs']
  mean, std = float(normalized['PopArt/mean']), float(normalized['PopArt/std'])
  np.testing.assert_allclose([mean, std], [vs.mean(), vs.std()], rtol=1e-4)
  assert abs(std - 1.) > .1  # The division below is visible.
  np.testing.assert_allclose(normalized['V/value function'], plain['V/value function'],
                             rtol=1e-5)
  np.testing.assert_allclose(normalized['V/L2 error'] * std, plain['V/L2 error'], rtol=1e-4)
  np.testing.assert_allclose(normalized['losses/policy'] * std, plain['losses/policy'],
                             rtol=1e-4)
  # The compensation absorbed the move of the statistics: the baseline means the same values.
  baseline = tf.constant([[-2.], [0.], [3.]])
  np.testing.assert_allclose(
      normalizer.unnormalize_prediction(normalizer.correct_prediction(baseline)), baseline,
      atol=1e-5)


def test_popart_gradients_reach_the_network_and_the_compensation():
  weights, inputs = _weights(), _inputs(True)
  agent, normalizer = FakeAgent(weights), _popart()
  variables = list(agent.trainable_variables) + list(normalizer.trainable_variables)
  with tf.GradientTape() as tape:
    total, _ = learner.compute_loss(_distribution(), agent, (), *_tf_args(inputs),
                                    lambda: tf.constant(ENTROPY_COST), _config(),
                                    value_normalizer=normalizer)
  gradients = tape.gradient(total, variables)
  assert len(normalizer.trainable_variables) == 2
  for variable, gradient in zip(variables, gradients):
    assert gradient is not None and np.abs(gradient.numpy()).max() > 1e-6, variable.name


def test_popart_flag_trains_and_checkpoints_the_statistics(tmp_path):
  """`--popart`: the agent's optimizer steps move PopArt's statistics and compensation, and both
  are in its checkpoint; without the flag there is no PopArt."""
  agent = _agent(popart=True)
  minimize, batch = _minimize_with_sgd(agent, .1)
  normalizer = agent.value_normalizer
  compensation = [normalizer.compensation_std, normalizer.compensation_mean]
  assert all(any(v is c for v in agent.trainable_variables) for c in compensation)
  for _ in range(2):
    metrics = minimize(batch)
  assert float(metrics['PopArt/std']) != 1.
  mean, std = (float(x[0]) for x in normalizer.mean_std_tracker.get_mean_std())
  assert (float(compensation[0]), float(compensation[1])) != (1., 0.)

  restored = _agent(popart=True)
  path = tf.train.Checkpoint(**agent.checkpointed()).write(str(tmp_path / 'ckpt'))
  tf.train.Checkpoint(**restored.checkpointed()).read(path).assert_consumed()
  restored_normalizer = restored.value_normalizer
  np.testing.assert_allclose([float(x[0]) for x in
                              restored_normalizer.mean_std_tracker.get_mean_std()], [mean, std])
  np.testing.assert_allclose([float(restored_normalizer.compensation_std),
                              float(restored_normalizer.compensation_mean)],
                             [float(c) for c in compensation])

  plain = _agent(popart=False)
  assert plain.value_normalizer is None and 'popart' not in plain.checkpointed()
