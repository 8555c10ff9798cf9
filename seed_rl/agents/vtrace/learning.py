"""V-trace's pure learning function.

IMPALA's actor-critic loss with V-trace off-policy correction (Espeholt et al. 2018), as in the
original SEED RL; the learner (`learner.py`) wires it into the learner runtime.
"""

from typing import Any, Callable, Dict, Tuple

import tensorflow as tf

from seed_rl.common import vtrace
from seed_rl.common.training import popart


def bootstrap_abandoned_steps(rewards, values, abandoned):
  """Rewards in which each step followed by an abandoned episode end gets its own value.

  An episode cut short (a time limit) after step t has a next state the learner never sees, so
  its value is unknown, not 0. With the episode end's zero discount, reward `V(x_t)` makes the
  step's TD error 0: its value target is its own value, its advantage 0, and no return flows
  through it into earlier steps, which bootstrap from `V(x_t)` instead.

  Args:
    rewards, values: `[T, B]` float32, the reward following step t and the value of step t.
    abandoned: `[T, B]` bool, the episode was abandoned right after step t.
  """
  return tf.where(abandoned, tf.stop_gradient(values), rewards)


def compute_loss(parametric_action_distribution, agent, agent_state, prev_actions,
                 env_outputs, agent_outputs, entropy_cost: Callable[[], tf.Tensor],
                 config: Any, value_normalizer: Any = None
                 ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
  """The V-trace actor-critic loss of one batch of time-major unrolls.

  Args:
    parametric_action_distribution: the action distribution of the policy logits.
    agent: the agent; called with `unroll=True, is_training=True`.
    agent_state: recurrent state at the start of the unrolls, `[B, ...]`.
    prev_actions, env_outputs, agent_outputs: `[T+1, B, ...]`; step t's reward and done flag
      belong to the action of step t-1; agent_outputs hold the behaviour policy's logits.
    entropy_cost: callable returning the current entropy cost.
    config: hyper-parameters `discounting`, `lambda_`, `baseline_cost`, `kl_cost`,
      `max_abs_reward` and `target_entropy`; optionally `reward_scaling` (1 when absent), which
      multiplies the clipped rewards.
    value_normalizer: None, or a `popart.PopArt` (initialized): the agent's baseline is then the
      value in PopArt's normalized space; V-trace runs on the values in reward units, the
      statistics take in the V-trace targets, and the value loss and the policy gradient's
      advantages are in the normalized space (Hessel et al. 2019, PopArt-IMPALA), so their scale
      no longer depends on the rewards'.

  Returns:
    `(total_loss, metrics)`, metrics a dict of named scalars.
  """
  normalizer = popart.IdentityNormalizer() if value_normalizer is None else value_normalizer
  learner_outputs, _ = agent(prev_actions, env_outputs, agent_state, unroll=True,
                             is_training=True)
  normalized_values = learner_outputs.baseline
  learner_outputs = learner_outputs._replace(baseline=normalizer.unnormalize_prediction(
      normalizer.correct_prediction(normalized_values)))
  bootstrap_value = learner_outputs.baseline[-1]

  # The last step only bootstraps: the transitions are (step t, action t, reward of t+1).
  agent_outputs = tf.nest.map_structure(lambda t: t[:-1], agent_outputs)
  learner_outputs = tf.nest.map_structure(lambda t: t[:-1], learner_outputs)
  rewards = env_outputs.reward[1:]
  done = env_outputs.done[1:]
  if config.max_abs_reward:
    rewards = tf.clip_by_value(rewards, -config.max_abs_reward, config.max_abs_reward)
  rewards *= config.reward_scaling
  rewards = bootstrap_abandoned_steps(rewards, learner_outputs.baseline,
                                      done & env_outputs.abandoned[1:])
  discounts = tf.cast(~done, tf.float32) * config.discounting

  target_dist = parametric_action_distribution(learner_outputs.policy_logits)
  behaviour_dist = parametric_action_distribution(agent_outputs.policy_logits)
  target_action_log_probs = target_dist.log_prob(agent_outputs.action)
  behaviour_action_log_probs = behaviour_dist.log_prob(agent_outputs.action)

  vtrace_returns = vtrace.from_importance_weights(
      target_action_log_probs=target_action_log_probs,
      behaviour_action_log_probs=behaviour_action_log_probs,
      discounts=discounts, rewards=rewards, values=learner_outputs.baseline,
      bootstrap_value=bootstrap_value, lambda_=config.lambda_)

  # The statistics change first; the compensation keeps the values the same.
  normalizer.update_normalization_statistics(vtrace_returns.vs)
  advantages = normalizer.normalize_advantage(vtrace_returns.pg_advantages)
  policy_loss = -tf.reduce_mean(target_action_log_probs * tf.stop_gradient(advantages))
  v_error = (normalizer.normalize_target(vtrace_returns.vs) -
             normalizer.correct_prediction(normalized_values[:-1]))
  v_loss = config.baseline_cost * .5 * tf.reduce_mean(tf.square(v_error))
  entropy = tf.reduce_mean(target_dist.entropy())
  entropy_loss = -tf.stop_gradient(entropy_cost()) * entropy
  kl = behaviour_action_log_probs - target_action_log_probs
  kl_loss = config.kl_cost * tf.reduce_mean(kl)
  if config.target_entropy is not None:
    entropy_adjustment_loss = entropy_cost() * tf.stop_gradient(entropy - config.target_entropy)
  else:
    # Keeps the entropy cost variable in the gradient computation (with a zero gradient).
    entropy_adjustment_loss = 0. * entropy_cost()
  total_loss = policy_loss + v_loss + entropy_loss + kl_loss + entropy_adjustment_loss

  metrics = {
      'V/value function': tf.reduce_mean(learner_outputs.baseline),
      'V/L2 error': tf.sqrt(tf.reduce_mean(tf.square(v_error))),
      'losses/policy': policy_loss,
      'losses/V': v_loss,
      'losses/entropy': entropy_loss,
      'losses/kl': kl_loss,
      'losses/total': total_loss,
  }
  if value_normalizer is not None:
    mean, std = value_normalizer.mean_std_tracker.get_mean_std()
    metrics['PopArt/mean'], metrics['PopArt/std'] = mean[0], std[0]
  if hasattr(target_dist, 'scale'):
    metrics['policy/std'] = tf.reduce_mean(target_dist.scale)
  metrics['policy/max_action_abs(before_tanh)'] = tf.reduce_max(
      tf.abs(tf.cast(agent_outputs.action, tf.float32)))
  metrics['policy/entropy'] = entropy
  metrics['policy/entropy_cost'] = entropy_cost()
  metrics['policy/kl(old|new)'] = tf.reduce_mean(kl)
  return total_loss, metrics
