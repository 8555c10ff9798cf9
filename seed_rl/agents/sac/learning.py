"""SAC's pure learning function: actor, V and twin-Q losses with an adapted entropy cost.

Soft actor-critic (Haarnoja et al. 2018) as the original SEED RL has it: a V network trained on
the soft value of the policy's own actions, `n_critics` Q networks trained on bootstrapped
targets from a target network, and a policy trained on the smallest Q (through the action when
the action distribution is reparametrizable, by the policy gradient otherwise).
"""

from typing import Any, Callable, Dict, Tuple

import tensorflow as tf


def _policy_std(dist):
  """Mean standard deviation of the policy's base distribution, or None if it has none."""
  while dist is not None and not hasattr(dist, 'scale'):
    dist = getattr(dist, 'distribution', None)
  return None if dist is None else tf.reduce_mean(dist.scale)


def _goals_of_the_previous_step(env_outputs):
  """env_outputs whose `desired_goal` at t+1 is the one of t: a bootstrapped value must use the
  goal of the transition it bootstraps (hindsight replay substitutes goals per step)."""
  observation = env_outputs.observation
  if not (isinstance(observation, dict) and 'desired_goal' in observation):
    return env_outputs
  goals = observation['desired_goal']
  shifted = tf.concat([goals[:1], goals[:-1]], axis=0)
  return env_outputs._replace(observation=dict(observation, desired_goal=shifted))


def _actor_loss(parametric_action_distribution, agent, inputs, alpha):
  """`(actor_loss, actor_objective, entropy, v, policy_std)`: the policy's loss on its own
  sampled actions (`policy_std` None when the distribution has no scale)."""
  dist = parametric_action_distribution(agent.get_action_params(*inputs, unroll=True,
                                                                is_training=True))
  action = dist.sample()
  entropy = dist.entropy()
  log_prob = dist.log_prob(action)
  v = agent.get_V(*inputs, unroll=True, is_training=True)
  with tf.GradientTape() as tape:
    tape.watch(action)
    min_q = tf.reduce_min(agent.get_Q(*inputs, action=action, unroll=True, is_training=True),
                          axis=-1)
  actor_objective = min_q - tf.stop_gradient(alpha) * log_prob
  if parametric_action_distribution.reparametrizable:
    # DDPG-style: the gradient reaches the policy through the action, not the Q networks.
    action_gradient = tf.stop_gradient(tape.gradient(min_q, action))
    actor_loss = (-tf.reduce_mean(tf.reduce_sum(action_gradient * action, axis=-1)) -
                  tf.stop_gradient(alpha) * tf.reduce_mean(entropy))
  else:
    advantage = tf.stop_gradient(actor_objective - v)
    advantage = (advantage - tf.reduce_mean(advantage)) / (tf.math.reduce_std(advantage) + 1e-3)
    actor_loss = -tf.reduce_mean(log_prob * advantage)
  return actor_loss, actor_objective, entropy, v, _policy_std(dist)


def _next_values(parametric_action_distribution, agent, target_agent, target_inputs, alpha,
                 bootstrap_net: str):
  """Soft value of every step after the first: target V, or target Q of a policy action plus
  the entropy bonus."""
  if bootstrap_net == 'v':
    return target_agent.get_V(*target_inputs, unroll=True)[1:]
  dist = parametric_action_distribution(agent.get_action_params(*target_inputs, unroll=True))
  next_q = tf.reduce_min(target_agent.get_Q(*target_inputs, action=dist.sample(), unroll=True),
                         axis=-1)
  return (next_q + tf.stop_gradient(alpha) * dist.entropy())[1:]


def compute_loss(parametric_action_distribution, agent, target_agent, agent_state,
                 prev_actions, env_outputs, agent_actions, entropy_cost: Callable[[], tf.Tensor],
                 config: Any) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
  """The SAC loss of one batch of time-major unrolls.

  Args:
    parametric_action_distribution: the action distribution of the policy's parameters.
    agent, target_agent: networks with `get_action_params`, `get_V`, `get_Q` (see `networks`).
    agent_state: recurrent state at the start of the unrolls, `[B, ...]`.
    prev_actions, env_outputs, agent_actions: `[T+1, B, ...]`; step t's reward and done flag
      belong to the action of step t-1; agent_actions are the actions the actors took.
    entropy_cost: callable returning the current entropy cost alpha.
    config: hyper-parameters `discounting`, `max_abs_reward`, `target_entropy` and
      `bootstrap_net` ('v' or 'q').

  Returns:
    `(total_loss, metrics)`, metrics a dict of named scalars.
  """
  rewards = env_outputs.reward[1:]
  if config.max_abs_reward:
    rewards = tf.clip_by_value(rewards, -config.max_abs_reward, config.max_abs_reward)
  discounts = tf.cast(~env_outputs.done[1:], tf.float32) * config.discounting
  inputs = (prev_actions[:-1], tf.nest.map_structure(lambda t: t[:-1], env_outputs), agent_state)
  target_inputs = (prev_actions, _goals_of_the_previous_step(env_outputs), agent_state)
  alpha = entropy_cost()

  agent(*inputs, unroll=True, is_training=True)  # Updates observation statistics, if any.
  actor_loss, actor_objective, entropy, v, std = _actor_loss(parametric_action_distribution,
                                                             agent, inputs, alpha)
  v_error = v - tf.stop_gradient(actor_objective)
  v_loss = tf.reduce_mean(tf.square(v_error))
  q_old = agent.get_Q(*inputs, action=agent_actions[:-1], unroll=True, is_training=True)
  next_values = _next_values(parametric_action_distribution, agent, target_agent,
                             target_inputs, alpha, config.bootstrap_net)
  target_q = tf.stop_gradient(rewards + discounts * next_values)
  # A step right before an abandoned episode end (a time limit) has no target: the state it
  # led to is unknown, its value not 0. Its Q learns nothing.
  learns = tf.cast(~(env_outputs.done[1:] & env_outputs.abandoned[1:]), tf.float32)
  q_error = (q_old - target_q[..., tf.newaxis]) * learns[..., tf.newaxis]
  q_loss = tf.reduce_mean(tf.square(q_error))
  mean_entropy = tf.reduce_mean(entropy)
  if config.target_entropy is not None:
    entropy_adjustment_loss = alpha * tf.stop_gradient(mean_entropy - config.target_entropy)
  else:
    # Keeps the entropy cost variable in the gradient computation (with a zero gradient).
    entropy_adjustment_loss = 0. * alpha
  total_loss = actor_loss + q_loss + v_loss + entropy_adjustment_loss

  metrics = {
      'Q/value': tf.reduce_mean(q_old),
      'Q/L2 error': tf.sqrt(tf.reduce_mean(tf.square(q_error))),
      'V/value': tf.reduce_mean(v),
      'V/L2 error': tf.sqrt(tf.reduce_mean(tf.square(v_error))),
      'losses/actor': actor_loss,
      'losses/Q': q_loss,
      'losses/V': v_loss,
      'losses/total': total_loss,
  }
  if std is not None:
    metrics['policy/std'] = std
  metrics['policy/max_action_abs(before_tanh)'] = tf.reduce_max(
      tf.abs(tf.cast(agent_actions, tf.float32)))
  metrics['policy/entropy'] = mean_entropy
  metrics['policy/entropy_cost'] = alpha
  return total_loss, metrics
