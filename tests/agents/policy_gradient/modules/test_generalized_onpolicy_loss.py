"""GeneralizedOnPolicyLoss with a tiny Keras agent: targets, episode ends, clipping, gradients."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import advantages
from seed_rl.agents.policy_gradient.modules import constraints
from seed_rl.agents.policy_gradient.modules import continuous_control_agent
from seed_rl.agents.policy_gradient.modules import generalized_onpolicy_loss as gol
from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.agents.policy_gradient.modules import logging_module
from seed_rl.agents.policy_gradient.modules import policy_losses
from seed_rl.agents.policy_gradient.modules import policy_regularizers
from seed_rl.agents.policy_gradient.modules import popart
from seed_rl.agents.policy_gradient.modules import running_statistics
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput
from tests.agents.policy_gradient.modules.onpolicy_helpers import B, DIST, T
from tests.agents.policy_gradient.modules.onpolicy_helpers import TinyAgent as _TinyAgent
from tests.agents.policy_gradient.modules.onpolicy_helpers import log_prob, log_softmax
from tests.agents.policy_gradient.modules.onpolicy_helpers import unroll as _unroll

pytestmark = pytest.mark.timeout(120)


def _values(agent, unroll):
  """The agent's raw value predictions `[T+1, B]` on the unroll."""
  _, prev_actions, env_outputs, _ = unroll
  return agent((prev_actions, env_outputs), (), unroll=True)[0].baseline.numpy()


def _loss(agent, reward_normalizer=None, discount_factor=1., lambda_=1., **kwargs):
  kwargs.setdefault('policy_loss', policy_losses.pg())
  loss = gol.GeneralizedOnPolicyLoss(
      agent, reward_normalizer, DIST, advantages.GAE(lambda_), discount_factor=discount_factor,
      **kwargs)
  loss.init()
  return loss


def _targets(loss, unroll):
  return loss.compute_advantages(*unroll)[0].numpy()


def _popart():
  return popart.PopArt(running_statistics.AverageMeanStd())


def test_loss_is_finite_and_reaches_every_variable():
  agent = _TinyAgent()
  kl_constraint = constraints.LagrangeInequalityCoefficient(0.01, init_variables=False)
  loss = gol.GeneralizedOnPolicyLoss(
      agent, _popart(), DIST, advantages.GAE(0.95), policy_losses.ppo(0.2), 0.99,
      regularizer=policy_regularizers.KLPolicyRegularizer(entropy=0.01, kl_mu_pi=kl_constraint))
  loss.init()  # Creates PopArt's variables and the Lagrange multiplier.
  assert loss.reward_normalizer.initialized
  unroll = _unroll(rewards=np.random.RandomState(1).randn(T + 1, B))
  agent(unroll[1:3], (), unroll=True)  # Builds the agent's variables.
  variables = [*agent.trainable_variables, *loss.reward_normalizer.trainable_variables,
               *kl_constraint.trainable_variables]
  assert len(variables) == 6 + 2 + 1

  @tf.function
  def step():
    with tf.GradientTape() as tape, logging_module.LoggingTape(loss) as logs:
      total = loss(*unroll)
    return total, tape.gradient(total, variables), dict(logs)

  total, gradients, logs = step()
  assert np.isfinite(total.numpy())
  for variable, gradient in zip(variables, gradients):
    assert gradient is not None, variable.name
    assert np.all(np.isfinite(gradient.numpy())), variable.name
    assert np.any(gradient.numpy() != 0.), variable.name
  for key in ('V_error', 'abs_V_error', 'corrected_predictions', 'policy_loss', 'v_loss',
              'regularization_loss', 'total_loss'):
    assert f'GeneralizedOnPolicyLoss/{key}' in logs
  assert 'PopArt/std' in logs and 'KLPolicyRegularizer/entropy' in logs
  np.testing.assert_allclose(logs['GeneralizedOnPolicyLoss/total_loss'], total)


@pytest.mark.parametrize('correct_observations', [False, True])
def test_trainable_variables_are_the_agents_then_the_losss_own(correct_observations):
  """The agent decides which of its variables train: its observation correction only with
  `correct_observations`, although `tf.Module` finds that correction trainable either way."""
  distribution = parametric_distribution.normal_tanh_distribution(2)
  agent = continuous_control_agent.ContinuousControlAgent(
      distribution, input_normalization.InputNormalization(running_statistics.AverageMeanStd()),
      num_layers_policy=1, num_layers_value=1, num_units_policy=4, num_units_value=4,
      correct_observations=correct_observations)
  agent((tf.zeros([1, 2]), EnvOutput(tf.zeros([1]), tf.zeros([1], tf.bool), tf.zeros([1, 3]),
                                     tf.zeros([1], tf.bool), tf.zeros([1], tf.int32))), ())
  loss = gol.GeneralizedOnPolicyLoss(agent, _popart(), distribution, advantages.GAE(0.9),
                                     policy_losses.pg(), 0.9)
  loss.init()
  correction = agent.observation_normalizer.trainable_variables
  assert len(correction) == 2
  expected = [*agent.trainable_variables, *loss.reward_normalizer.trainable_variables]
  assert [id(v) for v in loss.trainable_variables] == [id(v) for v in expected]
  assert all(any(v is c for v in expected) == correct_observations for c in correction)


def test_targets_bootstrap_from_the_last_value():
  agent = _TinyAgent()
  unroll = _unroll()
  values = _values(agent, unroll)
  targets, advantages_ = (t.numpy() for t in _loss(agent).compute_advantages(*unroll))
  # Zero rewards, no episode end, gamma = lambda = 1: every step's return is V_T.
  np.testing.assert_allclose(targets, np.broadcast_to(values[-1], [T, B]), rtol=1e-5)
  np.testing.assert_allclose(advantages_, values[-1] - values[:-1], rtol=1e-5, atol=1e-6)
  # The discount per agent step is discount_factor ** frame_skip.
  discounted = _targets(_loss(agent, discount_factor=0.9, frame_skip=2), unroll)
  powers = 0.81 ** np.arange(T, 0, -1)[:, np.newaxis]
  np.testing.assert_allclose(discounted, powers * values[-1], rtol=1e-5)


def _ended_after_step(k, abandoned):
  """done (and abandoned) flags of an episode of env 0 that ended after action k."""
  done = np.zeros([T + 1, B], bool)
  done[k + 1, 0] = True
  return done, done if abandoned else np.zeros_like(done)


@pytest.mark.parametrize('properly', [True, False])
def test_terminated_and_abandoned_episodes(properly):
  agent = _TinyAgent()
  k = 1
  loss = _loss(agent, handle_abandoned_episodes_properly=properly)
  done, abandoned = _ended_after_step(k, abandoned=False)
  terminated = _targets(loss, _unroll(done=done, abandoned=abandoned))
  done, abandoned = _ended_after_step(k, abandoned=True)
  abandoned_unroll = _unroll(done=done, abandoned=abandoned)
  abandoned = _targets(loss, abandoned_unroll)
  values = _values(agent, abandoned_unroll)
  # Zero rewards: a terminated episode returns 0, the next one bootstraps from V_T.
  np.testing.assert_allclose(terminated[:k + 1, 0], 0., atol=1e-6)
  np.testing.assert_allclose(terminated[k + 1:, 0], values[-1, 0], rtol=1e-5)
  if properly:
    # The abandoned episode's steps bootstrap from the value of its last step.
    np.testing.assert_allclose(abandoned[:k + 1, 0], values[k, 0], rtol=1e-5)
    np.testing.assert_allclose(abandoned[k + 1:], terminated[k + 1:], rtol=1e-5)
  else:
    np.testing.assert_allclose(abandoned, terminated, rtol=1e-6)
  # The other envs' episodes went on.
  np.testing.assert_allclose(abandoned[:, 1:], terminated[:, 1:], rtol=1e-6)


def test_rewards_are_clipped_then_scaled():
  agent = _TinyAgent()
  signs = np.sign(np.random.RandomState(2).randn(T + 1, B)).astype(np.float32)
  clipped = _targets(_loss(agent, max_abs_reward=1., reward_scaling=2.),
                     _unroll(rewards=100. * signs))
  expected = _targets(_loss(agent), _unroll(rewards=2. * signs))
  np.testing.assert_allclose(clipped, expected, rtol=1e-5)
  unclipped = _targets(_loss(agent, reward_scaling=2.), _unroll(rewards=100. * signs))
  assert np.abs(unclipped - expected).max() > 10.


def test_value_clipping_only_acts_beyond_eps_and_huber_loss():
  agent = _TinyAgent()
  # Targets of about 100 * (T - t), far above the predictions (about 1).
  rewards = np.full([T + 1, B], 100., np.float32)
  state, prev_actions, env_outputs, agent_outputs = _unroll(rewards=rewards)
  values = _values(agent, (state, prev_actions, env_outputs, agent_outputs))

  def v_loss(eps, behaviour_values, **kwargs):
    loss = _loss(agent, value_ppo_style_clip_eps=eps, **kwargs)
    behaviour = agent_outputs._replace(baseline=tf.constant(behaviour_values))
    with logging_module.LoggingTape(loss) as logs:
      loss(state, prev_actions, env_outputs, behaviour)
    return float(logs['GeneralizedOnPolicyLoss/v_loss'])

  unclipped = v_loss(None, values)
  # Predictions within eps of the acting policy's values: no clipping.
  np.testing.assert_allclose(v_loss(0.2, values + 0.1), unclipped, rtol=1e-6)
  # The predictions moved 10 towards the targets: clipped to 0.2, the loss stays larger.
  clipped = v_loss(0.2, values - 10.)
  targets = 100. * np.arange(T, 0, -1)[:, np.newaxis] + values[-1]
  expected = np.mean(0.5 * np.square(targets - (values[:-1] - 10. + 0.2)))
  np.testing.assert_allclose(clipped, expected, rtol=1e-5)
  assert clipped > unclipped + 100.
  # Errors of hundreds: the Huber loss is linear there.
  np.testing.assert_allclose(v_loss(None, values, huber_delta=2.),
                             np.mean(2. * (np.abs(targets - values[:-1]) - 1.)), rtol=1e-5)


def _transitions(t):
  """`[T, B, ...]` -> `[1, T*B, ...]`: single transitions, as a shuffling learner feeds them."""
  return tf.reshape(t, [1, T * B] + t.shape[2:].as_list())


def test_precomputed_targets_on_transitions_give_the_same_loss():
  agent = _TinyAgent()
  unroll = _unroll(rewards=np.random.RandomState(3).randn(T + 1, B), seed=3)
  kwargs = dict(discount_factor=0.9, lambda_=0.9, policy_loss=policy_losses.ppo(0.2),
                regularizer=policy_regularizers.KLPolicyRegularizer(entropy=0.01, kl_pi_mu=0.1))
  whole = _loss(agent, _popart(), **kwargs)
  split = _loss(agent, _popart(), **kwargs)
  expected = whole(*unroll)

  targets, advantages_ = split.compute_advantages(*unroll)
  _, prev_actions, env_outputs, agent_outputs = tf.nest.map_structure(
      lambda t: _transitions(t[:-1]), unroll)
  total = split((), prev_actions, env_outputs, agent_outputs, _transitions(targets),
                _transitions(advantages_))
  np.testing.assert_allclose(total, expected, rtol=1e-5)
  # The targets were normalized: PopArt learned their statistics.
  assert abs(float(split.reward_normalizer.mean_std_tracker.get_mean_std()[0][0])) > 1e-3


def test_targets_and_predictions_share_the_normalized_space():
  agent = _TinyAgent()
  unroll = _unroll(rewards=5. + 3. * np.random.RandomState(4).randn(T + 1, B))
  raw_targets = _targets(_loss(agent), unroll)
  values = _values(agent, unroll)[:-1]
  loss = _loss(agent, _popart())
  with logging_module.LoggingTape(loss) as logs:
    loss(*unroll)
  mean, std = (float(x[0]) for x in loss.reward_normalizer.mean_std_tracker.get_mean_std())
  assert std > 2.  # The statistics moved far from the initial (0, 1).
  # PopArt keeps the values the network stands for, so the error is the raw one over std.
  np.testing.assert_allclose(logs['GeneralizedOnPolicyLoss/V_error'],
                             np.mean(raw_targets - values) / std, rtol=1e-4)
  np.testing.assert_allclose(logs['GeneralizedOnPolicyLoss/corrected_predictions'],
                             np.mean((values - mean) / std), rtol=1e-4)


def test_regularization_in_returns():
  agent = _TinyAgent()
  regularizer = policy_regularizers.KLPolicyRegularizer(entropy=0.5)
  unroll = _unroll()
  _, prev_actions, env_outputs, agent_outputs = unroll
  logits = agent((prev_actions, env_outputs), (), unroll=True)[0].policy_logits
  per_step, _ = regularizer(DIST, logits[:-1], agent_outputs.policy_logits[:-1])
  rewards = np.zeros([T + 1, B], np.float32)
  rewards[1:] = -per_step.numpy()  # 0.5 * entropy: a bonus for exploring.
  expected = _targets(_loss(agent), _unroll(rewards=rewards))
  loss = _loss(agent, regularizer=regularizer, include_regularization_in_returns=True)
  np.testing.assert_allclose(_targets(loss, unroll), expected, rtol=1e-5)
  # The loss evaluates the regularizer twice, yet logs its terms once.
  with logging_module.LoggingTape(loss) as logs:
    loss(*unroll)
  assert 'KLPolicyRegularizer/entropy' in logs


class _WeightedLogProbLoss(gol.PolicyLoss):
  """`mean(-A log pi)`, remembering the keywords it was given."""

  def __call__(self, advantages_, target_action_log_probs, behaviour_action_log_probs,
               **kwargs):
    self.keywords = kwargs
    return tf.reduce_mean(-advantages_ * target_action_log_probs)


class _NegativeEntropy(gol.RegularizationLoss):
  """`-H(pi)` per step, through the TFP distribution the given distribution creates."""

  def __call__(self, parametric_action_distribution, target_action_logits,
               behaviour_action_logits, actions):
    return -parametric_action_distribution(target_action_logits).entropy(), 0.


def test_base_classes_and_a_plain_callable_distribution():
  """A plain `params -> TFP distribution` callable serves as the distribution (as
  `categorical_distribution(...).create_dist`), for the log-probs, the policy loss's keywords
  and the regularizer."""
  agent = _TinyAgent()
  unroll = _unroll(rewards=np.random.RandomState(5).randn(T + 1, B), seed=5)
  policy_loss = _WeightedLogProbLoss()
  loss = gol.GeneralizedOnPolicyLoss(agent, None, DIST.create_dist, advantages.GAE(0.9),
                                     policy_loss, 0.9, _NegativeEntropy())
  with logging_module.LoggingTape(loss) as logs:
    total = loss(*unroll)
  _, prev_actions, env_outputs, agent_outputs = unroll
  logits = agent((prev_actions, env_outputs), (), unroll=True)[0].policy_logits.numpy()[:-1]
  _, advantages_ = loss.compute_advantages(*unroll)
  log_pi = log_prob(logits, agent_outputs.action.numpy()[:-1])
  np.testing.assert_allclose(logs['GeneralizedOnPolicyLoss/policy_loss'],
                             np.mean(-advantages_.numpy() * log_pi), rtol=1e-5)
  pi = np.exp(log_softmax(logits))
  np.testing.assert_allclose(logs['GeneralizedOnPolicyLoss/regularization_loss'],
                             np.mean(np.sum(pi * np.log(pi), -1)), rtol=1e-5)
  np.testing.assert_allclose(
      total, logs['GeneralizedOnPolicyLoss/policy_loss'] + logs['GeneralizedOnPolicyLoss/v_loss']
      + logs['GeneralizedOnPolicyLoss/regularization_loss'], rtol=1e-5)
  assert sorted(policy_loss.keywords) == ['actions', 'behaviour_logits',
                                          'parametric_action_distribution', 'target_logits']
  np.testing.assert_array_equal(policy_loss.keywords['actions'], agent_outputs.action[:-1])
  np.testing.assert_allclose(policy_loss.keywords['target_logits'], logits, rtol=1e-6)
  np.testing.assert_array_equal(policy_loss.keywords['behaviour_logits'],
                                agent_outputs.policy_logits[:-1])
  assert loss.parametric_action_distribution.create_dist is DIST.create_dist
  # Its parameter size is unknown: what depends on it is refused, not answered wrongly.
  for unknown in ('param_size', 'reparametrizable'):
    with pytest.raises(ValueError, match=f'{unknown}.* unknown for a distribution given as a '
                       'plain callable'):
      getattr(loss.parametric_action_distribution, unknown)


def test_base_classes_are_abstract_and_a_bad_distribution_is_refused():
  with pytest.raises(TypeError, match='abstract'):
    gol.PolicyLoss()  # pylint: disable=abstract-class-instantiated
  with pytest.raises(TypeError, match='abstract'):
    gol.RegularizationLoss()  # pylint: disable=abstract-class-instantiated
  with pytest.raises(TypeError, match='parametric_action_distribution must be a '
                     'ParametricDistribution or a callable'):
    gol.GeneralizedOnPolicyLoss(_TinyAgent(), None, 'categorical', advantages.GAE(0.9),
                                policy_losses.pg(), 0.9)
