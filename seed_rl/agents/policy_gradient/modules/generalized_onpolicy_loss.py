"""The on-policy actor-critic loss that ties the policy-gradient modules together.

`GeneralizedOnPolicyLoss` runs the agent on time-major unrolls, turns rewards and values into
value targets and advantages with an `advantage_estimator` (`advantages.py`), and adds up
- the policy loss (`policy_losses.py`) on the advantages,
- the value loss between the targets and the value predictions, both in the normalized space of
  the `reward_normalizer` (PopArt, `popart.py`), and
- the policy regularization (`policy_regularizers.py`).

Data layout: `prev_actions`, `env_outputs` (`EnvOutput` nests) and `agent_outputs`
(`AgentOutput(action, policy_logits, baseline)` of the acting policy) are time-major. For an
unroll of T actions they have T+1 steps: `agent_outputs[t]` acted on `env_outputs[t]`,
`env_outputs[t+1]` holds the reward of that action and whether the episode ended after it, and
the last step only bootstraps. `agent_state` is the agent's state before the first step.

The policy loss and the regularizer follow the calling conventions of the base classes
`PolicyLoss` and `RegularizationLoss` (any callable of those arguments serves). The losses of
`policy_losses.py` and the regularizers of `policy_regularizers.py` subclass them, so this
module imports neither.

The loss either computes targets and advantages itself (one call on `[T+1, B]` unrolls) or takes
them precomputed by `compute_advantages`, so that a learner can compute them once per unroll
and then train on shuffled parts of it, e.g. `[1, N]` single transitions of a feed-forward agent.
"""

import abc
import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import gin
import tensorflow as tf

from seed_rl.common import parametric_distribution as pd
from seed_rl.common import structures
from seed_rl.common.training import logging_module
from seed_rl.common.training import popart


class PolicyLoss(tf.Module, metaclass=abc.ABCMeta):
  """A policy loss, as `GeneralizedOnPolicyLoss` calls it (e.g. `policy_losses.ppo(0.2)`)."""

  @abc.abstractmethod
  def __call__(self, advantages: tf.Tensor, target_action_log_probs: tf.Tensor,
               behaviour_action_log_probs: tf.Tensor, **kwargs: Any) -> tf.Tensor:
    """The policy loss of `[T, B]` steps: a scalar (or per-step `[T, B]`, then averaged).

    Args:
      advantages: `[T, B]` (normalized) advantages, without gradient.
      target_action_log_probs: `[T, B]` log pi(a_t|x_t) of the learned policy, with gradient.
      behaviour_action_log_probs: `[T, B]` log mu(a_t|x_t) of the acting policy.
      **kwargs: given by `GeneralizedOnPolicyLoss` as keywords, for losses that need more
        than the log-probabilities: `actions` `[T, B, ...]`, `target_logits` and
        `behaviour_logits` `[T, B, param_size]` and the `parametric_action_distribution`.
    """


class RegularizationLoss(tf.Module, metaclass=abc.ABCMeta):
  """A regularizer of the policy (e.g. `policy_regularizers.KLPolicyRegularizer`)."""

  @abc.abstractmethod
  def __call__(self, parametric_action_distribution: pd.ParametricDistribution,
               target_action_logits: tf.Tensor, behaviour_action_logits: tf.Tensor,
               actions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """`(per_step_loss [T, B], global_loss)`: the first is averaged into the loss (or
    subtracted from the rewards), the scalar second is added as is.

    Args:
      parametric_action_distribution: the policy's distribution; calling it with logits gives
        the TFP distribution.
      target_action_logits: `[T, B, param_size]` parameters of the learned policy pi.
      behaviour_action_logits: `[T, B, param_size]` parameters of the acting policy mu.
      actions: `[T, B, ...]` the actions the acting policy took.
    """


class _CallableDistribution(pd.ParametricDistribution):
  """A `ParametricDistribution` made from a plain `params -> TFP distribution` callable.

  Its parameter size is unknown, and with it `reparametrizable` (decided on a distribution of
  `param_size` zeros): both raise rather than answer wrongly. The loss and its policy losses
  and regularizers only create distributions from given parameters (`__call__`, `log_prob`,
  `entropy`, `kl_divergence`, `sample`), which works; networks that need the size must be
  given a `ParametricDistribution` with one.
  """

  def __init__(self, create_dist: Callable[[tf.Tensor], Any]):
    super().__init__(param_size=None, create_dist=create_dist)

  def _unknown(self, what: str) -> ValueError:
    return ValueError(
        f'{what} is unknown for a distribution given as a plain callable '
        f'({self.create_dist!r}): pass a ParametricDistribution, e.g. '
        'parametric_distribution.normal_tanh_distribution(num_actions).')

  @property
  def param_size(self) -> int:
    raise self._unknown('param_size')

  @property
  def reparametrizable(self) -> bool:
    raise self._unknown('reparametrizable (decided on param_size zero parameters)')


def as_parametric_distribution(distribution: Any) -> pd.ParametricDistribution:
  """`distribution` as a `ParametricDistribution`: one as it is, or a plain callable from
  policy parameters to a TFP distribution (e.g. `normal_tanh_distribution(n).create_dist`).

  A plain callable serves the loss, which only creates distributions from given parameters;
  its `param_size` and `reparametrizable` are unknown and raise (see `_CallableDistribution`).

  Raises:
    TypeError: `distribution` is neither.
  """
  if isinstance(distribution, pd.ParametricDistribution):
    return distribution
  if not callable(distribution):
    raise TypeError(
        f'parametric_action_distribution must be a ParametricDistribution or a callable from '
        f'policy parameters to a TFP distribution, got {distribution!r}; pass e.g. '
        'parametric_distribution.normal_tanh_distribution(num_actions).')
  return _CallableDistribution(distribution)


def _has_required_arguments(function: Callable[..., Any]) -> bool:
  """Whether calling `function()` with no argument would miss one."""
  return any(p.default is inspect.Parameter.empty and
             p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
             for p in inspect.signature(function).parameters.values())


@contextlib.contextmanager
def _logging_paused(module: Any) -> Iterator[None]:
  """Runs `module` (and its submodules) without logging, then restores their tapes.

  For a second evaluation of a module within one call, e.g. of the regularizer whose terms are
  logged by the loss proper: logging the same keys twice into one tape is an error.
  """
  # pylint: disable=protected-access
  candidates = [module, *getattr(module, 'submodules', ())]
  paused = [(m, m._logging_dict) for m in candidates
            if isinstance(m, logging_module.LoggingModule) and m._logging_dict is not None]
  # pylint: enable=protected-access
  for m, _ in paused:
    m.unset_logging_dict()
  try:
    yield
  finally:
    for m, logs in paused:
      m.set_logging_dict(logs)


def _value_loss(targets: tf.Tensor, predictions: tf.Tensor,
                huber_delta: float | None) -> tf.Tensor:
  """Per-step `0.5 * error^2`, or the Huber loss: the same up to |error| = delta, linear beyond.

  Both have the gradient `-error` for small errors; the Huber loss bounds it by delta, so that
  rare large errors (e.g. right after the normalization statistics moved) cannot dominate.
  """
  error = targets - predictions
  if huber_delta is None:
    return 0.5 * tf.square(error)
  abs_error = tf.abs(error)
  quadratic = tf.minimum(abs_error, huber_delta)
  return 0.5 * tf.square(quadratic) + huber_delta * (abs_error - quadratic)


@gin.configurable
class GeneralizedOnPolicyLoss(tf.Module, logging_module.LoggingModule):
  """Actor-critic loss `policy_loss + baseline_cost * value_loss + regularization`.

  Logs (means over the steps) `GeneralizedOnPolicyLoss/V_error` (normalized target minus
  corrected prediction), `abs_V_error`, `corrected_predictions` and the parts of the loss
  `policy_loss`, `v_loss`, `regularization_loss` and `total_loss`, all under the same prefix.
  """

  def __init__(self, agent: tf.keras.Model, reward_normalizer: Any,
               parametric_action_distribution: pd.ParametricDistribution | Callable[..., Any],
               advantage_estimator: Callable[..., tuple[tf.Tensor, tf.Tensor]],
               policy_loss: PolicyLoss | Callable[..., tf.Tensor],
               discount_factor: float,
               regularizer: RegularizationLoss | Callable[..., Any] | None = None,
               max_abs_reward: float | None = None,
               handle_abandoned_episodes_properly: bool = True,
               huber_delta: float | None = None,
               value_ppo_style_clip_eps: float | None = None,
               baseline_cost: float = 1.,
               include_regularization_in_returns: bool = False,
               frame_skip: int = 1, reward_scaling: float = 1.0):
    """Creates the loss; `init()` creates the variables of its submodules.

    Args:
      agent: called as `agent((prev_actions, env_outputs), agent_state, unroll=True,
        is_training=True)`, returning `(AgentOutput(action, policy_logits, baseline),
        new_state)` on time-major inputs; `baseline` is the value in the normalizer's space.
      reward_normalizer: a `popart.PopArt`, or anything with its methods `correct_prediction`,
        `unnormalize_prediction`, `normalize_target`, `normalize_advantage` and
        `update_normalization_statistics`; None learns unnormalized values.
      parametric_action_distribution: the distribution of `policy_logits`, or a plain callable
        from them to a TFP distribution (see `as_parametric_distribution`).
      advantage_estimator: `advantages.GAE`, `VTrace`, `NStep` or anything with their call
        signature, returning `(targets, advantages)`.
      policy_loss: e.g. `policy_losses.ppo(0.2)`; called as a `PolicyLoss`, returning the mean
        loss (or the per-step loss, which is averaged).
      discount_factor: gamma per agent step before frame skipping (see `frame_skip`).
      regularizer: e.g. `policy_regularizers.KLPolicyRegularizer`; called as a
        `RegularizationLoss`, returning `(per_step_loss, global_loss)`. None: no regularization.
      max_abs_reward: rewards are clipped to `[-max_abs_reward, max_abs_reward]` (None: not).
      handle_abandoned_episodes_properly: bootstrap where an episode was cut short (by a time
        limit) rather than terminated; False treats both as terminations.
      huber_delta: Huber loss with this delta for the value (None: squared error).
      value_ppo_style_clip_eps: the value loss is the larger one of the prediction's and of the
        prediction clipped to within this of the acting policy's value (None: no clipping).
      baseline_cost: weight of the value loss.
      include_regularization_in_returns: the regularizer's per-step loss is also subtracted
        from the rewards, so that the policy avoids states where it is large.
      frame_skip: environment frames per agent step; the discount per step is
        `discount_factor ** frame_skip`.
      reward_scaling: rewards are multiplied by this after clipping.
    """
    super().__init__(name='GeneralizedOnPolicyLoss')
    self.agent = agent
    self.reward_normalizer = reward_normalizer
    self.parametric_action_distribution = as_parametric_distribution(
        parametric_action_distribution)
    self.advantage_estimator = advantage_estimator
    self.policy_loss = policy_loss
    self.discount_factor = discount_factor
    self.regularizer = regularizer
    self.max_abs_reward = max_abs_reward
    self.handle_abandoned_episodes_properly = handle_abandoned_episodes_properly
    self.huber_delta = huber_delta
    self.value_ppo_style_clip_eps = value_ppo_style_clip_eps
    self.baseline_cost = baseline_cost
    self.include_regularization_in_returns = include_regularization_in_returns
    self.frame_skip = frame_skip
    self.reward_scaling = reward_scaling
    self._normalizer = (popart.IdentityNormalizer() if reward_normalizer is None
                        else reward_normalizer)

  def init(self) -> None:
    """Creates the submodules' variables (Lagrange multipliers, PopArt's statistics).

    Calls `init()` of every submodule that takes no argument; call it inside the distribution
    strategy's scope. Modules whose `init` needs arguments (the `MeanStd` trackers, given
    their size by their owner's `init()`) are left to their owner.
    """
    for module in self.submodules:
      init = getattr(module, 'init', None)
      if callable(init) and not _has_required_arguments(init):
        init()

  @property
  def trainable_variables(self) -> list[tf.Variable]:
    """The agent's, then the loss's own (PopArt's, Lagrange multipliers'): all that training
    the loss updates.

    The agent decides which of its variables are trainable: `tf.Module`'s own search misses a
    Keras agent's weights, and finds variables the agent leaves out on purpose (e.g. the
    observation correction of a `ContinuousControlAgent` without `correct_observations`), so
    none of the agent's variables is taken from that search.
    """
    agent_variables = {id(v) for v in self.agent.variables}
    return list(self.agent.trainable_variables) + [
        v for v in super().trainable_variables if id(v) not in agent_variables]

  def _log_mean(self, key: str, tensor: tf.Tensor) -> None:
    self.log(f'GeneralizedOnPolicyLoss/{key}', tf.reduce_mean(tensor))

  def _action_log_probs(self, learner_outputs: Any, agent_outputs: Any
                        ) -> tuple[tf.Tensor, tf.Tensor]:
    """log pi(a_t|x_t) of the learned policy (with gradient) and log mu(a_t|x_t) of the acting
    one, for the actions the acting policy took."""
    dist = self.parametric_action_distribution
    target = dist.log_prob(learner_outputs.policy_logits, agent_outputs.action)
    behaviour = dist.log_prob(agent_outputs.policy_logits, agent_outputs.action)
    return target, tf.stop_gradient(behaviour)

  def compute_advantages(self, agent_state: Any, prev_actions: Any, env_outputs: Any,
                         agent_outputs: Any, return_learner_outputs: bool = False
                         ) -> tuple[Any, ...]:
    """Normalized value targets and advantages of `[T+1, B]` unrolls.

    Updates the reward normalizer's statistics with the targets first and then normalizes
    targets and advantages with the updated statistics: `__call__` later compares the targets
    with predictions corrected by the updated compensation, so both must be in the same space.

    Returns:
      `(normalized_targets, normalized_advantages)`, both `[T, B]` without gradient, followed
      by the learner's `AgentOutput` of the first T steps (with gradient) if
      `return_learner_outputs`.
    """
    # The reward of each action, and whether its episode ended after it.
    env = structures.EnvOutput(*env_outputs)
    rewards = tf.cast(env.reward[1:], tf.float32)
    if self.max_abs_reward is not None:
      rewards = tf.clip_by_value(rewards, -self.max_abs_reward, self.max_abs_reward)
    rewards *= self.reward_scaling
    done = tf.cast(env.done[1:], tf.bool)
    abandoned = tf.cast(env.abandoned[1:], tf.bool)
    if not self.handle_abandoned_episodes_properly:
      abandoned = tf.zeros_like(abandoned)
    done_terminated = tf.logical_and(done, tf.logical_not(abandoned))
    done_abandoned = tf.logical_and(done, abandoned)

    all_outputs, _ = self.agent((prev_actions, env_outputs), agent_state, unroll=True,
                                is_training=True)
    values = self._normalizer.unnormalize_prediction(
        self._normalizer.correct_prediction(all_outputs.baseline))
    learner_outputs = tf.nest.map_structure(lambda t: t[:-1], all_outputs)
    agent_outputs = tf.nest.map_structure(lambda t: t[:-1], agent_outputs)

    if self.include_regularization_in_returns and self.regularizer is not None:
      with _logging_paused(self.regularizer):  # The loss proper logs its terms.
        per_step_regularization, _ = self.regularizer(
            self.parametric_action_distribution, learner_outputs.policy_logits,
            agent_outputs.policy_logits, agent_outputs.action)
      rewards -= tf.stop_gradient(per_step_regularization)

    target_log_probs, behaviour_log_probs = self._action_log_probs(learner_outputs,
                                                                   agent_outputs)
    targets, advantages = self.advantage_estimator(
        tf.stop_gradient(values), rewards, done_terminated, done_abandoned,
        self.discount_factor ** self.frame_skip, tf.stop_gradient(target_log_probs),
        behaviour_log_probs)
    self._normalizer.update_normalization_statistics(targets)
    outputs = (tf.stop_gradient(self._normalizer.normalize_target(targets)),
               tf.stop_gradient(self._normalizer.normalize_advantage(advantages)))
    if return_learner_outputs:
      outputs += (learner_outputs,)
    return outputs

  def __call__(self, agent_state: Any, prev_actions: Any, env_outputs: Any, agent_outputs: Any,
               normalized_targets: tf.Tensor | None = None,
               normalized_advantages: tf.Tensor | None = None) -> tf.Tensor:
    """The scalar loss.

    Without `normalized_targets`, the inputs are `[T+1, B]` unrolls: targets and advantages are
    computed here (see `compute_advantages`, which also updates the normalizer) and the loss
    covers the first T steps. With them (and `normalized_advantages`), the inputs have the
    targets' `[T, B]` steps, e.g. `[1, N]` transitions, and the agent is run on them.
    """
    if normalized_targets is None:
      normalized_targets, normalized_advantages, learner_outputs = self.compute_advantages(
          agent_state, prev_actions, env_outputs, agent_outputs, return_learner_outputs=True)
      agent_outputs = tf.nest.map_structure(lambda t: t[:-1], agent_outputs)
    else:
      if normalized_advantages is None:
        raise ValueError('normalized_advantages must be given with normalized_targets')
      learner_outputs, _ = self.agent((prev_actions, env_outputs), agent_state, unroll=True,
                                      is_training=True)

    target_log_probs, behaviour_log_probs = self._action_log_probs(learner_outputs,
                                                                   agent_outputs)
    policy_loss = tf.reduce_mean(self.policy_loss(
        normalized_advantages, target_log_probs, behaviour_log_probs,
        actions=agent_outputs.action, target_logits=learner_outputs.policy_logits,
        behaviour_logits=agent_outputs.policy_logits,
        parametric_action_distribution=self.parametric_action_distribution))

    predictions = self._normalizer.correct_prediction(learner_outputs.baseline)
    v_error = normalized_targets - predictions
    self._log_mean('V_error', v_error)
    self._log_mean('abs_V_error', tf.abs(v_error))
    self._log_mean('corrected_predictions', predictions)
    v_loss = _value_loss(normalized_targets, predictions, self.huber_delta)
    if self.value_ppo_style_clip_eps is not None:
      behaviour_predictions = tf.stop_gradient(
          self._normalizer.correct_prediction(agent_outputs.baseline))
      eps = self.value_ppo_style_clip_eps
      clipped = behaviour_predictions + tf.clip_by_value(
          predictions - behaviour_predictions, -eps, eps)
      v_loss = tf.maximum(v_loss, _value_loss(normalized_targets, clipped, self.huber_delta))
    v_loss = tf.reduce_mean(v_loss)

    regularization_loss = tf.constant(0., tf.float32)
    if self.regularizer is not None:
      per_step_regularization, global_regularization = self.regularizer(
          self.parametric_action_distribution, learner_outputs.policy_logits,
          agent_outputs.policy_logits, agent_outputs.action)
      regularization_loss = tf.reduce_mean(per_step_regularization) + global_regularization

    total_loss = policy_loss + self.baseline_cost * v_loss + regularization_loss
    self._log_mean('policy_loss', policy_loss)
    self._log_mean('v_loss', v_loss)
    self._log_mean('regularization_loss', regularization_loss)
    self._log_mean('total_loss', total_loss)
    return total_loss
