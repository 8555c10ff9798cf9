"""The configurable on-policy learner (PPO, V-trace, AWR, V-MPO), assembled with gin.

Actors act with an inference copy of the agent; training updates a separate training agent,
whose variables (weights and observation statistics) are copied to the inference agent after
every training step. The unroll queue holds exactly one training step's unrolls and, with
`block_inference_on_training`, inference waits while a step trains: each batch is acted by the
weights of the previous step (on-policy). A step trains `epochs_per_step` epochs of
`batches_per_step` minibatch steps of a `GeneralizedOnPolicyLoss`
(`seed_rl.common.training.minibatches`).
Evaluation environments (the `num_eval_envs` highest ids) act with the distribution's mode.
"""

import contextlib
import os
from typing import Any, Callable, Union

from absl import flags
import gin
import tensorflow as tf

from seed_rl.agents.policy_gradient import config as config_lib
from seed_rl.agents.policy_gradient.modules import generalized_onpolicy_loss
from seed_rl.common import learner_runtime
from seed_rl.common import parametric_distribution
from seed_rl.common import specs as specs_lib
from seed_rl.common.training import logging_module
from seed_rl.common.training import minibatches

# The operative gin configuration, written to the logdir when training ends.
GIN_CONFIG_FILE = 'learner.gin'


def default_create_loss_fn(agent: Any, distribution: Any) -> Any:
  """The gin-configured `GeneralizedOnPolicyLoss` of `agent`."""
  return generalized_onpolicy_loss.GeneralizedOnPolicyLoss(
      agent=agent, parametric_action_distribution=distribution)


@gin.configurable
def continuous_action_config(**kwargs: Any) -> Any:
  """The continuous action distribution's settings (gin-configurable, e.g. its minimum std)."""
  return parametric_distribution.continuous_action_config(**kwargs)


class PolicyGradientAgent(learner_runtime.SampledPolicyAgent):
  """The on-policy agent's part of the learner; see the module docstring."""
  name = 'POLICY_GRADIENT'
  supports_abandoned_episodes = True

  def __init__(self, create_agent_fn: Callable[..., Any], create_loss_fn: Callable[..., Any],
               config: config_lib.PolicyGradientConfig):
    super().__init__(config)
    self.training_config = config.training_config
    self.clip_norm = self.training_config.clip_norm or 0.
    self._create_agent_fn = create_agent_fn
    self._create_loss_fn = create_loss_fn
    self.training_agent = None
    self.loss_fn = None
    self.training_iterations = None
    if self.training_config.block_inference_on_training:
      self.inference_gate = learner_runtime.InferenceGate()

  def unroll_length(self) -> int:
    return self.training_config.unroll_length

  def unrolls_per_iteration(self) -> int:
    return self.training_config.virtual_batch_size

  def minimize_batch_size(self) -> int:
    config = self.training_config
    if config.batch_mode in minibatches.SPLIT_MODES:
      return config.batch_size * config.unroll_length
    return config.batch_size

  def unroll_queue_capacity(self) -> int:
    return self.training_config.virtual_batch_size

  def optimizer_steps_per_iteration(self) -> int:
    return self.training_config.epochs_per_step * self.training_config.batches_per_step

  def iteration_counter(self, optimizer: Any) -> tf.Variable:
    del optimizer  # It counts minibatch steps.
    return self.training_iterations

  def create_networks(self, action_space, observation_space, env_output_specs) -> None:
    self.distribution = parametric_distribution.get_parametric_distribution_for_action_space(
        action_space, continuous_action_config())
    self.network = self._create_agent_fn(action_space, observation_space, self.distribution)
    self.training_agent = self._create_agent_fn(action_space, observation_space,
                                                self.distribution)
    zero_inputs = specs_lib.zeros_for(
        (self.action_spec(action_space), env_output_specs), 1)
    for agent in (self.network, self.training_agent):
      agent(zero_inputs, agent.initial_state(1))
    self.loss_fn = self._create_loss_fn(self.training_agent, self.distribution)
    self.loss_fn.init()
    self.training_iterations = tf.Variable(0, dtype=tf.int64, trainable=False,
                                           name='training_iterations')
    self._copy_weights()

  def policy(self, prev_actions, env_outputs, agent_state):
    return self.network((prev_actions, env_outputs), agent_state)

  @property
  def trainable_variables(self):
    """The loss's: the training agent's, then the loss's own (PopArt's, Lagrange
    multipliers'), as `GeneralizedOnPolicyLoss.trainable_variables` lists them."""
    return list(self.loss_fn.trainable_variables)

  def checkpointed(self):
    return {'agent': self.network, 'loss_fn': self.loss_fn,
            'training_agent': self.training_agent,
            'training_iterations': self.training_iterations}

  @tf.function
  def _copy_weights(self) -> None:
    """The training agent's variables (weights and statistics) into the inference agent."""
    for target, source in zip(self.network.variables, self.training_agent.variables):
      target.assign(source)

  @tf.function
  def _compute_advantages(self, unrolls):
    return minibatches.unroll_advantages(self.loss_fn, unrolls)

  @tf.function
  def _end_of_step(self, unrolls) -> None:
    # Each unroll's last step is the next one's first: counted once.
    observations = tf.nest.map_structure(
        lambda o: tf.reshape(o[:, :-1], [-1] + o.shape.as_list()[2:]),
        unrolls.env_outputs.observation)
    self.training_agent.update_observation_normalization_statistics(observations)
    self._copy_weights()
    self.training_iterations.assign_add(1)

  def training_step(self, minimize, iteration) -> None:
    config = self.training_config
    unrolls = self.unroll_queue.dequeue_many(config.virtual_batch_size)
    with (self.inference_gate.closed() if self.inference_gate is not None
          else contextlib.nullcontext()):
      minibatches.train_epochs(
          config.epochs_per_step, unrolls, config.batch_mode, minimize, config.batches_per_step,
          compute_advantages=self._compute_advantages)
      self._end_of_step(unrolls)

  def compute_loss(self, batch):
    with logging_module.LoggingTape(self.loss_fn) as logs:
      loss = minibatches.minibatch_loss(self.loss_fn, batch)
    return loss, dict(logs, loss=loss)


def learner_loop(create_env_fn: Callable[[int, Any], Any],
                 create_agent_fn: Callable[..., Any],
                 create_optimizer_fn: Callable[[int], Any],
                 config: Union[config_lib.PolicyGradientConfig, flags.FlagValues, None] = None,
                 create_loss_fn: Callable[..., Any] = default_create_loss_fn) -> None:
  """Trains an on-policy agent, serving inference to actors until the frame budget is spent.

  Args:
    create_env_fn: `(env_id, config) -> env`; called once for the observation/action spaces.
    create_agent_fn: `(action_space, observation_space, parametric_action_distribution) ->
      agent`, called twice (inference and training agents) and called as
      `agent((prev_actions, env_outputs), core_state, unroll=False, is_training=False)` (see
      `modules.continuous_control_agent`).
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`, where iterations
      count optimizer steps (epochs x minibatches per training step).
    config: a `PolicyGradientConfig`, or absl flags (`FLAGS` by default) that define the flags
      of `learner_flags`, read with `PolicyGradientConfig.from_flags`.
    create_loss_fn: `(training_agent, parametric_action_distribution) -> loss`, by default the
      gin-configured `GeneralizedOnPolicyLoss`; the optimizer trains the loss's
      `trainable_variables`, which must include the training agent's.
  """
  config = config_lib.PolicyGradientConfig.of(config)
  agent = PolicyGradientAgent(create_agent_fn, create_loss_fn, config)
  try:
    learner_runtime.run(agent, create_env_fn, create_optimizer_fn, config)
  finally:
    write_operative_config(config.logdir)


def write_operative_config(logdir: str) -> None:
  """Writes the gin configuration the run used (bindings actually read) into the logdir."""
  tf.io.gfile.makedirs(logdir)
  with tf.io.gfile.GFile(os.path.join(logdir, GIN_CONFIG_FILE), 'w') as f:
    f.write(gin.operative_config_str())
