"""R2D2's pure learning functions: exploration, value rescaling, n-step double-Q loss.

Kapturowski et al. 2019 ("Recurrent Experience Replay in Distributed Reinforcement Learning"),
as in the original SEED RL; the learner (`learner.py`) wires them into the learner runtime.
"""

import tensorflow as tf

from seed_rl.common.training import tensors


def get_envs_epsilon(env_ids, num_training_envs: int, num_eval_envs: int, eval_epsilon: float,
                     epsilon: float = 0.4, alpha: float = 7.):
  """Per-environment epsilon: epsilon^(1 + alpha i / (n - 1)) for training env i (0.4 to 0.4^8
  with the defaults of Ape-X and R2D2), `eval_epsilon` for evaluation environments."""
  training = tf.pow(tf.cast(epsilon, tf.float32), tf.linspace(1., 1. + alpha, num_training_envs))
  epsilons = tf.concat([training, tf.fill([num_eval_envs], tf.cast(eval_epsilon, tf.float32))],
                       axis=0)
  return tf.gather(epsilons, env_ids)


def apply_epsilon_greedy(actions, env_ids, num_training_envs: int, num_eval_envs: int,
                         eval_epsilon: float, num_actions: int, epsilon: float = 0.4,
                         alpha: float = 7.):
  """Replaces each action by a uniformly random one with its environment's epsilon."""
  batch_size = tf.shape(actions)[0]
  epsilons = get_envs_epsilon(env_ids, num_training_envs, num_eval_envs, eval_epsilon, epsilon,
                              alpha)
  random_actions = tf.random.uniform([batch_size], maxval=num_actions, dtype=actions.dtype)
  explore = tf.random.uniform([batch_size]) < epsilons
  return tf.where(explore, random_actions, actions)


# ------------------------------------------------------------------------------------------------
# Loss.


def value_function_rescaling(x, epsilon: float = 1e-3):
  """h(x) = sign(x) (sqrt(|x| + 1) - 1) + epsilon x (Pohlen et al. 2018)."""
  return tf.math.sign(x) * (tf.math.sqrt(tf.math.abs(x) + 1.) - 1.) + epsilon * x


def inverse_value_function_rescaling(x, epsilon: float = 1e-3):
  """The inverse of `value_function_rescaling`."""
  # (sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps), rewritten without the cancellation and
  # the division by a small 2 eps that cost float32 about 1e-3 of accuracy at |x| = 100.
  shifted = tf.math.abs(x) + 1. + epsilon
  root = 2. * shifted / (tf.math.sqrt(1. + 4. * epsilon * shifted) + 1.)
  return tf.math.sign(x) * (tf.math.square(root) - 1.)


def _shift(x, steps: int):
  """x[t + steps] at position t, zero past the end."""
  return tf.concat([x[steps:], tf.zeros_like(x[:steps])], axis=0)


def n_step_bellman_target(rewards, done, q_target, gamma: float, n_steps: int,
                          abandoned=None):
  """n-step targets `sum_{i<k} gamma^i r[t+i] + gamma^k q_target[t+k-1]`, k = min(n, T - t).

  Terms after an episode end (a `done` at t+i stops the sum after r[t+i] and drops the
  bootstrap) are masked out; near the end of the sequence the horizon shrinks. Reward and done
  at index t belong to the transition into step t, and q_target[t] is the value at step t.
  An episode abandoned at t+i (cut short by a time limit: the state it reached is unknown, its
  value is not 0) stops the sum before r[t+i] and bootstraps from q_target[t+i-1]; the target
  of t itself (i = 0) is then meaningless and masked by the caller.

  Args:
    rewards, done, q_target: `[T, B]`.
    gamma: discount.
    n_steps: horizon n >= 1.
    abandoned: `[T, B]` bool or None: the transition into step t ended its episode without a
      terminal state (only counted where `done` is set too).

  Returns:
    `[T, B]` targets.
  """
  rewards = tf.convert_to_tensor(rewards, tf.float32)
  not_done = 1. - tf.cast(done, tf.float32)
  cut = tf.zeros_like(rewards, tf.bool) if abandoned is None else tf.logical_and(
      tf.cast(abandoned, tf.bool), tf.cast(done, tf.bool))
  q_target = tf.convert_to_tensor(q_target, tf.float32)
  time_index = tf.range(tf.shape(rewards)[0])[:, tf.newaxis]
  num_steps = tf.shape(rewards)[0]
  target = tf.zeros_like(rewards)
  bootstrap = tf.zeros_like(rewards)
  coefficient = tf.ones_like(rewards)  # gamma^i times the not-done flags crossed so far.
  alive = tf.ones_like(cut)  # No abandoned episode end crossed so far.
  for i in range(n_steps):
    available = time_index + i < num_steps
    cut_here = tf.logical_and(tf.logical_and(available, alive), _shift(cut, i))
    if i:  # (At i = 0 the caller masks the target.)
      bootstrap = tf.where(cut_here, coefficient * _shift(q_target, i - 1), bootstrap)
    alive = tf.logical_and(alive, tf.logical_not(cut_here))
    available = tf.logical_and(available, alive)
    target += tf.where(available, coefficient * _shift(rewards, i), 0.)
    next_coefficient = coefficient * gamma * _shift(not_done, i)
    bootstrap = tf.where(available, next_coefficient * _shift(q_target, i), bootstrap)
    coefficient = tf.where(available, next_coefficient, coefficient)
  return target + bootstrap


def compute_loss_and_priorities_from_agent_outputs(
    training_agent_output, target_agent_output, env_outputs, agent_outputs, gamma: float,
    eta: float = 0.9, n_steps: int = 5, value_function_rescaling_epsilon: float = 1e-3):
  """Double-Q n-step TD loss and priorities of `[T+1, B]` time-major unrolls.

  Q(s_t, a_t) of the played action `agent_outputs.action[t]` is regressed (in rescaled space)
  on the n-step target built from the target network's value of the online network's greedy
  action. Priorities mix the max and the mean absolute TD error over time (`eta`).

  Returns:
    `(loss <float32>[B], priorities <float32>[B])`; loss = 0.5 * sum_t TD_t^2.
  """
  num_actions = tf.shape(training_agent_output.q_values)[-1]
  replay_q = tf.reduce_sum(
      training_agent_output.q_values * tf.one_hot(agent_outputs.action, num_actions), axis=-1)
  best_actions = tf.argmax(training_agent_output.q_values, axis=-1)
  target_q = tf.reduce_sum(
      target_agent_output.q_values * tf.one_hot(best_actions, num_actions), axis=-1)
  target_q = inverse_value_function_rescaling(target_q, value_function_rescaling_epsilon)
  bellman_target = tf.stop_gradient(n_step_bellman_target(
      env_outputs.reward, env_outputs.done, target_q, gamma, n_steps, env_outputs.abandoned))
  # The target of Q at step t uses the reward and done flag stored with step t+1.
  bellman_target = value_function_rescaling(bellman_target[1:],
                                            value_function_rescaling_epsilon)
  # A step right before an abandoned episode end has no target: it learns nothing.
  learns = tf.cast(~(env_outputs.done[1:] & env_outputs.abandoned[1:]), tf.float32)
  td_error = (bellman_target - replay_q[:-1]) * learns
  abs_td_error = tf.abs(td_error)
  priorities = (eta * tf.reduce_max(abs_td_error, axis=0) +
                (1 - eta) * tf.reduce_sum(abs_td_error, axis=0) /
                tf.maximum(tf.reduce_sum(learns, axis=0), 1.))
  loss = 0.5 * tf.reduce_sum(tf.square(td_error), axis=0)
  return loss, priorities


def compute_loss_and_priorities(training_agent, target_agent, agent_state, prev_actions,
                                env_outputs, agent_outputs, gamma: float, burn_in: int,
                                **loss_kwargs):
  """Loss and priorities of unrolls whose first `burn_in` steps only warm up the state.

  Both networks run over the burn-in prefix from the stored state (no gradient through it),
  then over the rest, where the loss is computed.
  """
  if burn_in:
    (burn_in_prev_actions, prev_actions), (burn_in_env_outputs, env_outputs), (
        _, agent_outputs) = [tensors.split_structure(nest, burn_in)
                             for nest in (prev_actions, env_outputs, agent_outputs)]
    burn_in_inputs = (burn_in_prev_actions, burn_in_env_outputs)
    _, training_state = training_agent(burn_in_inputs, agent_state, unroll=True)
    _, target_state = target_agent(burn_in_inputs, agent_state, unroll=True)
    training_state = tf.nest.map_structure(tf.stop_gradient, training_state)
  else:
    training_state = target_state = agent_state
  training_output, _ = training_agent((prev_actions, env_outputs), training_state, unroll=True)
  target_output, _ = target_agent((prev_actions, env_outputs), target_state, unroll=True)
  target_output = tf.nest.map_structure(tf.stop_gradient, target_output)
  return compute_loss_and_priorities_from_agent_outputs(
      training_output, target_output, env_outputs, agent_outputs, gamma, **loss_kwargs)


def initial_priorities(env_outputs, agent_outputs, burn_in: int, gamma: float, **loss_kwargs):
  """Priorities of new batch-major `[B, T+1, ...]` unrolls before any training on them.

  The TD errors of the acting network's own q-values (stored in `agent_outputs`, used as both
  online and target values) after the burn-in steps.
  """
  env_outputs, agent_outputs = tensors.make_time_major((env_outputs, agent_outputs))
  _, (env_outputs, agent_outputs) = tensors.split_structure((env_outputs, agent_outputs),
                                                            burn_in)
  _, priorities = compute_loss_and_priorities_from_agent_outputs(
      agent_outputs, agent_outputs, env_outputs, agent_outputs, gamma, **loss_kwargs)
  return priorities
