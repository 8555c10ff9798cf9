"""V-trace (IMPALA) learner with central inference (SEED RL, Espeholt et al. 2020).

The learner runtime serves the actors and cuts each environment's steps into unrolls of
`unroll_length + 1` steps (consecutive unrolls share their boundary step); this agent samples
actions from its policy and trains an actor-critic with V-trace off-policy correction on batches
of `batch_size` unrolls taken straight from the unroll queue (loss in `learning`), one optimizer
step on each batch as in the original or, with `epochs_per_step`, several: V-trace's importance
weights correct for the policy moving between them, as they do for the policy lag. With
`batches_per_step` a training step takes that many batches' unrolls at once and each epoch
steps on minibatches of `batch_size` of them shuffled anew, as the on-policy agent's `shuffle`
mode does. With `popart` the network's value output is normalized (PopArt).
"""

from typing import Any, Callable, Union

from absl import flags
import tensorflow as tf

from seed_rl.agents.vtrace import config as config_lib
from seed_rl.agents.vtrace.learning import compute_loss  # The original's public name.
from seed_rl.common import learner_runtime
from seed_rl.common import parametric_distribution
from seed_rl.common.training import minibatches
from seed_rl.common.training import popart
from seed_rl.common.training import running_statistics
from seed_rl.common.training import tensors
from seed_rl.common.training.entropy_cost import EntropyCost

# PopArt's statistics fold their buffer into the accumulator every so many optimizer steps: the
# buffer's count (100 x 32 x 100 targets with the default batch) stays exact in float32.
_POPART_STEPS_PER_FLUSH = 100


class VTraceAgent(learner_runtime.SampledPolicyAgent):
  """The V-trace agent's part of the learner: sampled actions (the mode in evaluation
  environments), V-trace loss on queued unrolls."""
  name = 'VTRACE'
  supports_abandoned_episodes = True

  def __init__(self, create_agent_fn: Callable[..., tf.keras.Model],
               config: config_lib.VTraceConfig):
    super().__init__(config)
    self._create_agent_fn = create_agent_fn
    self._entropy_cost = None
    self._epochs_per_step = config.epochs_per_step
    self._batches_per_step = config.batches_per_step
    self.clip_norm = config.clip_norm
    self._use_popart = config.popart
    self.value_normalizer = None  # The PopArt module, with `popart`.
    # With several optimizer steps per training step, the training steps are counted apart.
    self._training_iterations = None

  def validate_config(self) -> None:
    if self._epochs_per_step < 1:
      raise ValueError(f'--epochs_per_step must be at least 1, got {self._epochs_per_step}.')
    if self._batches_per_step < 1:
      raise ValueError(f'--batches_per_step must be at least 1, got {self._batches_per_step}.')
    if self.clip_norm < 0:
      raise ValueError(f'--clip_norm must be 0 (no clipping) or positive, got {self.clip_norm}.')

  def unrolls_per_iteration(self) -> int:
    return self.config.batch_size * self._batches_per_step

  def optimizer_steps_per_iteration(self) -> int:
    return self._epochs_per_step * self._batches_per_step

  def iteration_counter(self, optimizer) -> tf.Variable:
    if self._training_iterations is None:
      return optimizer.iterations
    return self._training_iterations

  def create_networks(self, action_space, observation_space, env_output_specs) -> None:
    self.distribution = (
        parametric_distribution.get_parametric_distribution_for_action_space(action_space))
    self.network = self._create_agent_fn(action_space, observation_space, self.distribution)
    if self.optimizer_steps_per_iteration() > 1:
      self._training_iterations = tf.Variable(0, dtype=tf.int64, trainable=False,
                                              name='training_iterations')
    if self._use_popart:
      # The mean and std of every target so far, precise over billions of them.
      self.value_normalizer = popart.PopArt(
          running_statistics.TwoLevelAverageMeanStd(buffer_size=_POPART_STEPS_PER_FLUSH))
      self.value_normalizer.init()
    self._entropy_cost = getattr(self.network, 'entropy_cost', None)
    if self._entropy_cost is None:
      self._entropy_cost = EntropyCost(self.config.entropy_cost,
                                       self.config.entropy_cost_adjustment_speed)

  def policy(self, prev_actions, env_outputs, agent_state):
    return self.network(prev_actions, env_outputs, agent_state, unroll=False,
                        is_training=False)

  @property
  def trainable_variables(self):
    variables = list(self.network.trainable_variables)
    if isinstance(self._entropy_cost, EntropyCost):
      variables.append(self._entropy_cost.param)
    if self.value_normalizer is not None:
      variables += list(self.value_normalizer.trainable_variables)
    return variables

  def checkpointed(self):
    trackables = super().checkpointed()
    if isinstance(self._entropy_cost, EntropyCost):
      trackables['entropy_cost'] = self._entropy_cost
    if self._training_iterations is not None:
      trackables['training_iterations'] = self._training_iterations
    if self.value_normalizer is not None:
      trackables['popart'] = self.value_normalizer
    return trackables

  def training_step(self, minimize, iteration) -> None:
    # The batch is taken before the step starts, not inside `minimize`: there, ops that do not
    # depend on the data (the optimizer's step counter) could run even when a stop request
    # makes the dequeue fail, counting a step that never happened.
    unrolls = self.unroll_queue.dequeue_many(self.unrolls_per_iteration())
    # One batch keeps its order: shuffling would only cost a copy.
    batch_mode = 'shuffle' if self._batches_per_step > 1 else 'repeat'
    minibatches.train_epochs(epochs_per_step=self._epochs_per_step, unrolls=unrolls,
                             batch_mode=batch_mode, minimize=minimize,
                             batches_per_step=self._batches_per_step)
    if self._training_iterations is not None:
      self._training_iterations.assign_add(1)

  def compute_loss(self, batch):
    unrolls = tensors.make_time_major(batch._replace(agent_state=()))
    return compute_loss(self.distribution, self.network, batch.agent_state,
                        unrolls.prev_actions, unrolls.env_outputs, unrolls.agent_outputs,
                        self._entropy_cost, self.config, self.value_normalizer)


def learner_loop(create_env_fn: Callable[[int, Any], Any],
                 create_agent_fn: Callable[..., tf.keras.Model],
                 create_optimizer_fn: Callable[[int], Any],
                 config: Union[config_lib.VTraceConfig, flags.FlagValues, None] = None
                 ) -> None:
  """Trains a V-trace agent, serving inference to actors until the frame budget is spent.

  Args:
    create_env_fn: `(env_id, config) -> env`; called once for the observation/action spaces.
    create_agent_fn: `(action_space, observation_space, parametric_action_distribution) ->
      agent`, called as `agent(prev_actions, env_outputs, core_state, unroll, is_training)`
      (see `networks`).
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: a `VTraceConfig`, or absl flags (`FLAGS` by default) that define the flags of
      `learner_flags`, read with `VTraceConfig.from_flags`.
  """
  config = config_lib.VTraceConfig.of(config)
  learner_runtime.run(VTraceAgent(create_agent_fn, config), create_env_fn, create_optimizer_fn,
                      config)
