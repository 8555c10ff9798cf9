"""Advantage estimators of the on-policy agent: V-trace, GAE and n-step returns.

Every estimator maps one batch of time-major unrolls to `(targets, advantages)`:
- `values` `[T+1, B]`: the learner's value of every step of the unroll, the last one only
  bootstraps;
- `rewards`, `done_terminated`, `done_abandoned` `[T, B]`: the reward following action t and
  whether the episode ended right after it, either for real (`done_terminated`: the value after
  it is 0) or by being cut short (`done_abandoned`, e.g. a time limit: the value after it is
  unknown, since the next step of the unroll already belongs to the next episode);
- `targets` `[T, B]` are the value targets and `advantages` `[T, B]` the policy-gradient
  advantages, both without gradient.

A step whose episode was abandoned right after it learns nothing: its target is its own value
and its advantage 0, and no return propagates through it into earlier steps (they bootstrap from
its value instead). The gin classes `GAE`, `VTrace` and `NStep` share one call signature so that
a loss can take any of them as its `advantage_estimator`.
"""


import gin
import tensorflow as tf

Scalar = float | tf.Tensor


def _prepare(values, rewards, done_terminated, done_abandoned):
  """Converts the unroll to float32 tensors and checks that the time axes agree."""
  values = tf.convert_to_tensor(values, tf.float32)
  rewards = tf.convert_to_tensor(rewards, tf.float32)
  terminated = tf.cast(done_terminated, tf.float32)
  abandoned = tf.cast(done_abandoned, tf.float32)
  values.shape.assert_has_rank(rewards.shape.rank)
  rewards.shape.assert_is_compatible_with(terminated.shape)
  rewards.shape.assert_is_compatible_with(abandoned.shape)
  steps = rewards.shape[0]
  if steps is not None and values.shape[0] is not None and values.shape[0] != steps + 1:
    raise ValueError(f'values must have one step more than rewards (the bootstrap value), '
                     f'got {values.shape[0]} values for {steps} rewards')
  return values, rewards, terminated, abandoned


def vtrace(values: tf.Tensor, rewards: tf.Tensor, done_terminated: tf.Tensor,
           done_abandoned: tf.Tensor, discount_factor: Scalar,
           target_action_log_probs: tf.Tensor, behaviour_action_log_probs: tf.Tensor,
           lambda_: Scalar = 1., max_importance_weight: Scalar | None = 1.,
           name: str = 'vtrace') -> tuple[tf.Tensor, tf.Tensor]:
  """V-trace value targets and GAE-style advantages of off-policy unrolls.

  With `rho_t = min(pi(a_t|x_t) / mu(a_t|x_t), max_importance_weight)` and the TD error
  `delta_t = (r_t + gamma (1 - terminated_t) V_{t+1} - V_t) (1 - abandoned_t)`, backwards in time:
  `advantage_t = delta_t + (1 - terminated_t)(1 - abandoned_t) gamma lambda acc_{t+1}`,
  `acc_t = rho_t advantage_t` and `target_t = V_t + acc_t`. With `max_importance_weight=1` the
  targets are IMPALA's V-trace `vs` (`seed_rl.common.vtrace`). The advantages are not IMPALA's
  `r_t + gamma vs_{t+1} - V_t`: they are the lambda-return advantages whose traces are cut by the
  importance weights of the later steps (the policy loss may weight step t by its own rho_t).

  Args:
    values: `[T+1, B]` values of the learner; `values[T]` bootstraps.
    rewards: `[T, B]`.
    done_terminated: `[T, B]` bool, the episode terminated after step t.
    done_abandoned: `[T, B]` bool, the episode was cut short after step t.
    discount_factor: gamma.
    target_action_log_probs: `[T, B]` log pi(a_t|x_t) of the policy being learned.
    behaviour_action_log_probs: `[T, B]` log mu(a_t|x_t) of the policy that acted.
    lambda_: mixing of the TD(lambda) traces (1: Monte Carlo up to the importance weights).
    max_importance_weight: clip of the importance weights (None: no clip).
    name: name scope.

  Returns:
    `(targets, advantages)`, both `[T, B]` and without gradient.
  """
  with tf.name_scope(name):
    values, rewards, terminated, abandoned = _prepare(values, rewards, done_terminated,
                                                      done_abandoned)
    log_rhos = (tf.convert_to_tensor(target_action_log_probs, tf.float32) -
                tf.convert_to_tensor(behaviour_action_log_probs, tf.float32))
    rhos = tf.exp(log_rhos)
    if max_importance_weight is not None:
      rhos = tf.minimum(rhos, tf.cast(max_importance_weight, tf.float32))
    discount = tf.cast(discount_factor, tf.float32)
    trace_decay = discount * tf.cast(lambda_, tf.float32)
    deltas = (rewards + discount * (1. - terminated) * values[1:] - values[:-1]) * (1. - abandoned)
    # A return flows from step t+1 into step t only while the episode goes on after step t.
    continues = (1. - terminated) * (1. - abandoned)

    def backward_step(carry, step):
      acc, _ = carry
      delta, rho, cont = step
      advantage = delta + cont * trace_decay * acc
      return rho * advantage, advantage

    zeros = tf.zeros_like(values[-1])
    accs, advantages = tf.scan(backward_step, (deltas, rhos, continues),
                               initializer=(zeros, zeros), reverse=True)
    targets = values[:-1] + accs
    return tf.stop_gradient(targets), tf.stop_gradient(advantages)


def gae(values: tf.Tensor, rewards: tf.Tensor, done_terminated: tf.Tensor,
        done_abandoned: tf.Tensor, discount_factor: Scalar, lambda_: Scalar = 1.,
        name: str = 'gae') -> tuple[tf.Tensor, tf.Tensor]:
  """Generalized advantage estimation (Schulman et al. 2016): `vtrace` on on-policy data.

  `advantage_t = sum_k (gamma lambda)^k delta_{t+k}` within the episode and
  `target_t = V_t + advantage_t` (the lambda-return). Arguments and results as in `vtrace`.
  """
  zeros = tf.zeros_like(tf.convert_to_tensor(rewards, tf.float32))
  return vtrace(values, rewards, done_terminated, done_abandoned, discount_factor,
                target_action_log_probs=zeros, behaviour_action_log_probs=zeros,
                lambda_=lambda_, max_importance_weight=None, name=name)


def n_step_returns(values: tf.Tensor, rewards: tf.Tensor, done_terminated: tf.Tensor,
                   done_abandoned: tf.Tensor, discount_factor: Scalar, n: int,
                   name: str = 'n_step_returns') -> tuple[tf.Tensor, tf.Tensor]:
  """n-step returns `sum_{k<m} gamma^k r_{t+k} + gamma^m V_{t+m}` and their advantages.

  m is n, or less where the unroll ends (bootstrapping from `values[T]`) or the episode ends
  first: after a termination nothing is bootstrapped, before an abandonment the value of the
  abandoned step is (the abandoned step's own target is its value). The unroll is padded with n
  steps past its end so that every start time runs the same n-step loop. With n >= T this is
  GAE with lambda = 1.

  Returns:
    `(targets, advantages)`, both `[T, B]` and without gradient; `advantages = targets - V_t`.
  """
  if n < 1:
    raise ValueError(f'n must be at least 1, got {n}')
  with tf.name_scope(name):
    values, rewards, terminated, abandoned = _prepare(values, rewards, done_terminated,
                                                      done_abandoned)
    steps = rewards.shape[0]
    if steps is not None:
      n = min(n, steps)  # Every start time reaches the end of the unroll within T steps.
    num_steps = tf.shape(rewards)[0]
    pad = [[0, n]] + [[0, 0]] * (rewards.shape.rank - 1)
    rewards, terminated, abandoned = (tf.pad(t, pad) for t in (rewards, terminated, abandoned))
    inside = tf.pad(tf.ones_like(values[:-1]), pad)  # 1 on the unroll, 0 on the padding.
    values_padded = tf.pad(values, pad)

    def at(padded, k):
      """Step t+k of every start time t."""
      return padded[k:k + num_steps]

    discount = tf.cast(discount_factor, tf.float32)
    returns = tf.zeros_like(values[:-1])
    alive = tf.ones_like(returns)  # The sum has not stopped yet.
    scale = tf.ones_like(returns)  # gamma^k
    for k in range(n):
      # The sum stops before step t+k (bootstrapping from V_{t+k}) at the end of the unroll or
      # at an abandoned step, and after step t+k when the episode terminated there.
      stops_before = alive * tf.maximum(1. - at(inside, k), at(abandoned, k))
      returns += scale * stops_before * at(values_padded, k)
      alive -= stops_before
      returns += scale * alive * at(rewards, k)
      alive *= 1. - at(terminated, k)
      scale *= discount
    returns += scale * alive * at(values_padded, n)
    advantages = returns - values[:-1]
    return tf.stop_gradient(returns), tf.stop_gradient(advantages)


@gin.configurable
class GAE(tf.Module):
  """Generalized advantage estimation as a loss's `advantage_estimator` (ignores log-probs)."""

  def __init__(self, lambda_: float, name: str = 'GAE'):
    super().__init__(name=name)
    self.lambda_ = lambda_

  def __call__(self, values, rewards, done_terminated, done_abandoned, discount_factor,
               target_action_log_probs=None,
               behaviour_action_log_probs=None) -> tuple[tf.Tensor, tf.Tensor]:
    del target_action_log_probs, behaviour_action_log_probs  # On-policy estimate.
    return gae(values, rewards, done_terminated, done_abandoned, discount_factor,
               lambda_=self.lambda_)


@gin.configurable
class VTrace(tf.Module):
  """V-trace (see `vtrace`) as a loss's `advantage_estimator`."""

  def __init__(self, lambda_: float, max_importance_weight: float | None = 1.,
               name: str = 'VTrace'):
    super().__init__(name=name)
    self.lambda_ = lambda_
    self.max_importance_weight = max_importance_weight

  def __call__(self, values, rewards, done_terminated, done_abandoned, discount_factor,
               target_action_log_probs,
               behaviour_action_log_probs) -> tuple[tf.Tensor, tf.Tensor]:
    return vtrace(values, rewards, done_terminated, done_abandoned, discount_factor,
                  target_action_log_probs, behaviour_action_log_probs, lambda_=self.lambda_,
                  max_importance_weight=self.max_importance_weight)


@gin.configurable
class NStep(tf.Module):
  """n-step returns (see `n_step_returns`) as a loss's `advantage_estimator`."""

  def __init__(self, n: int, name: str = 'NStep'):
    super().__init__(name=name)
    if n < 1:
      raise ValueError(f'n must be at least 1, got {n}')
    self.n = n

  def __call__(self, values, rewards, done_terminated, done_abandoned, discount_factor,
               target_action_log_probs=None,
               behaviour_action_log_probs=None) -> tuple[tf.Tensor, tf.Tensor]:
    del target_action_log_probs, behaviour_action_log_probs  # On-policy estimate.
    return n_step_returns(values, rewards, done_terminated, done_abandoned, discount_factor,
                          self.n)
