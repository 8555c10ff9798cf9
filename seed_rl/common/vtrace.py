"""V-trace off-policy value targets and policy-gradient advantages (IMPALA, Espeholt et al. 2018).

All sequence tensors are time-major: `[T, B, ...]`; `bootstrap_value` is `[B, ...]`.
"""

import collections

import tensorflow as tf

VTraceReturns = collections.namedtuple('VTraceReturns', 'vs pg_advantages')


@tf.autograph.experimental.do_not_convert
def from_importance_weights(target_action_log_probs,
                            behaviour_action_log_probs,
                            discounts,
                            rewards,
                            values,
                            bootstrap_value,
                            clip_rho_threshold=1.0,
                            clip_pg_rho_threshold=1.0,
                            lambda_=1.0,
                            name='vtrace_from_importance_weights') -> VTraceReturns:
  """V-trace targets `vs` and advantages from log importance weights.

  Args:
    target_action_log_probs: `[T, B]` log pi(a_t|x_t) under the learner's policy.
    behaviour_action_log_probs: `[T, B]` log mu(a_t|x_t) under the acting policy.
    discounts: `[T, B]` discount applied after step t (0 at episode ends).
    rewards: `[T, B]` reward following action t.
    values: `[T, B]` V(x_t) from the learner.
    bootstrap_value: `[B]` V(x_T).
    clip_rho_threshold: clip of the importance weight in the value target (None: no clip).
    clip_pg_rho_threshold: clip of the importance weight in the advantage (None: no clip).
    lambda_: mixing parameter of the traces (1.0: plain V-trace).
    name: name scope.

  Returns:
    `VTraceReturns(vs, pg_advantages)`, both `[T, B]` and without gradient.
  """
  with tf.name_scope(name):
    log_rhos = (tf.convert_to_tensor(target_action_log_probs, tf.float32) -
                tf.convert_to_tensor(behaviour_action_log_probs, tf.float32))
    discounts = tf.convert_to_tensor(discounts, tf.float32)
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    values = tf.convert_to_tensor(values, tf.float32)
    bootstrap_value = tf.convert_to_tensor(bootstrap_value, tf.float32)

    rho_rank = log_rhos.shape.rank
    values.shape.assert_has_rank(rho_rank)
    bootstrap_value.shape.assert_has_rank(rho_rank - 1)
    discounts.shape.assert_has_rank(rho_rank)
    rewards.shape.assert_has_rank(rho_rank)

    rhos = tf.exp(log_rhos)
    clipped_rhos = rhos if clip_rho_threshold is None else tf.minimum(
        tf.cast(clip_rho_threshold, tf.float32), rhos)
    cs = lambda_ * tf.minimum(1.0, rhos)

    values_t_plus_1 = tf.concat([values[1:], bootstrap_value[tf.newaxis]], axis=0)
    deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)

    # acc_t = delta_t + gamma_t * c_t * acc_{t+1}, computed backwards from acc_T = 0.
    def backward_step(acc, step):
      delta, discount, c = step
      return delta + discount * c * acc

    vs_minus_v = tf.scan(backward_step, (deltas, discounts, cs),
                         initializer=tf.zeros_like(bootstrap_value),
                         reverse=True)
    vs = vs_minus_v + values

    vs_t_plus_1 = tf.concat([vs[1:], bootstrap_value[tf.newaxis]], axis=0)
    clipped_pg_rhos = rhos if clip_pg_rho_threshold is None else tf.minimum(
        tf.cast(clip_pg_rho_threshold, tf.float32), rhos)
    pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)

    return VTraceReturns(vs=tf.stop_gradient(vs),
                         pg_advantages=tf.stop_gradient(pg_advantages))
