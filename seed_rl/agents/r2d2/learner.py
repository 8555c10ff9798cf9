"""R2D2 learner with central inference (Kapturowski et al. 2019, in SEED RL).

Recurrent Q-learning from prioritized replay: the learner runtime cuts each environment's steps
into overlapping unrolls (`burn_in` steps to warm up the recurrent state, then `unroll_length`
steps to learn from); this agent acts epsilon-greedily (one epsilon per environment), gives every
unroll an initial priority from its own TD errors, and trains a double-Q, n-step, value-rescaled
loss (`learning`) on unrolls sampled by priority, with a target network copied every
`update_target_every_n_step` steps. Evaluation environments (the `num_eval_envs` highest ids)
act with `eval_epsilon` and never enter the replay.
"""

import collections
from typing import Any, Callable, Optional, Union

from absl import flags
import tensorflow as tf

from seed_rl.agents.r2d2 import config as config_lib
# The original's public names of the R2D2 learner module.
from seed_rl.agents.r2d2.learning import apply_epsilon_greedy
from seed_rl.agents.r2d2.learning import compute_loss_and_priorities
from seed_rl.agents.r2d2.learning import compute_loss_and_priorities_from_agent_outputs  # noqa: F401
from seed_rl.agents.r2d2.learning import get_envs_epsilon  # noqa: F401
from seed_rl.agents.r2d2.learning import initial_priorities
from seed_rl.agents.r2d2.learning import inverse_value_function_rescaling  # noqa: F401
from seed_rl.agents.r2d2.learning import n_step_bellman_target  # noqa: F401
from seed_rl.agents.r2d2.learning import value_function_rescaling  # noqa: F401
from seed_rl.common import learner_runtime
from seed_rl.common import specs as specs_lib
from seed_rl.common.training import replay as replay_lib
from seed_rl.common.training import tensors

# A training batch: unrolls sampled from the replay and their importance weights.
SampledUnrolls = collections.namedtuple('SampledUnrolls', 'unrolls importance_weights')


# ------------------------------------------------------------------------------------------------
# Configuration helpers (names of the original).


def get_replay_insertion_batch_size(per_replica: bool = False, config: Any = None) -> int:
  """New unrolls inserted into the replay per training step: batch_size / replay_ratio.

  `config`: an `R2D2Config` or absl flags (`FLAGS` by default).
  """
  config = config_lib.R2D2Config.of(config)
  if per_replica:
    return int(config.batch_size / config.replay_ratio / config.num_training_tpus)
  return int(config.batch_size / config.replay_ratio)


def get_num_training_envs(config: Any = None) -> int:
  """Environments that train: `num_envs - num_eval_envs` of `config` (an `R2D2Config` or absl
  flags, `FLAGS` by default)."""
  config = config_lib.R2D2Config.of(config)
  return config.num_envs - config.num_eval_envs


def is_training_env(env_id, config: Any = None):
  """Environments below `num_envs - num_eval_envs` train; the others evaluate."""
  return env_id < get_num_training_envs(config)


# ------------------------------------------------------------------------------------------------
# Learner.


def _validate_config(config: config_lib.R2D2Config) -> None:
  if config.n_steps < 1:
    raise ValueError(f'n_steps must be at least 1, got {config.n_steps}.')
  if config.burn_in < 0:
    raise ValueError(f'burn_in must be non-negative, got {config.burn_in}.')
  if get_replay_insertion_batch_size(config=config) < 1:
    raise ValueError(
        f'batch_size / replay_ratio (= {config.batch_size} / {config.replay_ratio}) must be at '
        'least 1: it is the number of new unrolls per training step.')
  for name, value in [('replay_buffer_size', config.replay_buffer_size),
                      ('update_target_every_n_step', config.update_target_every_n_step)]:
    if value <= 0:
      raise ValueError(f'{name} must be positive, got {value}.')


class R2D2Agent(learner_runtime.LearnerAgent):
  """The R2D2 agent's part of the learner: epsilon-greedy acting, prioritized replay, double-Q
  n-step loss with a target network."""
  name = 'R2D2'
  supports_abandoned_episodes = True
  exploration = 'epsilon-greedy'

  def __init__(self, create_agent_fn: Callable[..., tf.keras.Model],
               config: config_lib.R2D2Config):
    super().__init__(config)
    self._create_agent_fn = create_agent_fn
    self.burn_in = config.burn_in
    self.clip_norm = config.clip_norm
    self._loss_kwargs = dict(
        n_steps=config.n_steps,
        value_function_rescaling_epsilon=config.value_function_rescaling_epsilon)
    self._num_actions = None
    self._target_network = None
    self._replay = None

  def validate_config(self) -> None:
    _validate_config(self.config)

  def unrolls_per_iteration(self) -> int:
    return get_replay_insertion_batch_size(config=self.config)

  def action_spec(self, action_space) -> tf.TensorSpec:
    if not hasattr(action_space, 'n'):
      raise ValueError(f'R2D2 needs a Discrete action space, got {action_space}.')
    return tf.TensorSpec([], tf.int32, 'action')

  def create_networks(self, action_space, observation_space, env_output_specs) -> None:
    self._num_actions = int(action_space.n)
    self.network = self._create_agent_fn(env_output_specs, self._num_actions)
    self._target_network = self._create_agent_fn(env_output_specs, self._num_actions)
    zero_inputs = specs_lib.zeros_for((self.action_spec(action_space), env_output_specs), 1)
    self._target_network(zero_inputs, self._target_network.initial_state(1))

  def policy(self, prev_actions, env_outputs, agent_state):
    return self.network((prev_actions, env_outputs), agent_state)

  def explore(self, env_ids, agent_outputs):
    return agent_outputs._replace(action=apply_epsilon_greedy(
        agent_outputs.action, env_ids, get_num_training_envs(self.config),
        self.config.num_eval_envs, self.config.eval_epsilon, self._num_actions,
        self.config.exploration_epsilon, self.config.exploration_alpha))

  def checkpointed(self):
    return dict(agent=self.network, target_agent=self._target_network)

  def prepare_training(self, unroll_queue) -> None:
    super().prepare_training(unroll_queue)
    replay_lib.check_replay_memory(unroll_queue.specs, self.config.replay_buffer_size)
    self._replay = replay_lib.PrioritizedReplay(self.config.replay_buffer_size,
                                                unroll_queue.specs,
                                                self.config.importance_sampling_exponent)

  @tf.function
  def _update_target_network(self):
    for target_variable, variable in zip(self._target_network.trainable_variables,
                                         self.network.trainable_variables):
      target_variable.assign(variable)

  def _insert(self, unrolls) -> None:
    self._replay.insert(unrolls, initial_priorities(
        unrolls.env_outputs, unrolls.agent_outputs, self.burn_in, self.config.discounting,
        **self._loss_kwargs))

  @tf.function
  def _insert_and_sample(self):
    """Moves new unrolls into the replay (waiting until it holds enough), then samples.

    Runs in the training thread only: the replay is not thread-safe.
    """
    insertion_batch_size = self.unrolls_per_iteration()
    self._insert(self.unroll_queue.dequeue_many(insertion_batch_size))
    # The logging thread shows the fill (`waiting_status`) until training starts.
    while self._replay.num_inserted < self.config.replay_buffer_min_size:
      self._insert(self.unroll_queue.dequeue_many(insertion_batch_size))
    return self._replay.sample(self.config.batch_size, self.config.priority_exponent)

  def training_step(self, minimize, iteration) -> None:
    if iteration % self.config.update_target_every_n_step == 0:
      self._update_target_network()
    indices, importance_weights, unrolls = self._insert_and_sample()
    metrics = minimize(SampledUnrolls(unrolls, importance_weights))
    self._replay.update_priorities(indices, metrics['priorities'])

  def compute_loss(self, batch):
    unrolls = batch.unrolls
    prev_actions, env_outputs, agent_outputs = tensors.make_time_major(
        (unrolls.prev_actions, unrolls.env_outputs, unrolls.agent_outputs))
    loss_per_unroll, priorities = compute_loss_and_priorities(
        self.network, self._target_network, unrolls.agent_state, prev_actions, env_outputs,
        agent_outputs, self.config.discounting, self.burn_in, **self._loss_kwargs)
    loss = tf.reduce_mean(loss_per_unroll * batch.importance_weights)
    return loss, {'losses/total': loss,
                  'importance_weights/mean': tf.reduce_mean(batch.importance_weights),
                  'priorities': priorities}

  def write_summaries(self) -> None:
    tf.summary.scalar('replay_buffer_num_inserted', self._replay.num_inserted)
    tf.summary.scalar('unroll_queue_size', self.unroll_queue.size())

  def waiting_status(self) -> Optional[str]:
    """The replay's fill until it holds `replay_buffer_min_size` unrolls (logging thread)."""
    if self._replay is None:
      return None
    inserted = int(self._replay.num_inserted.numpy())
    needed = self.config.replay_buffer_min_size
    if inserted >= needed:
      return None
    return f'replay {inserted:,}/{needed:,} unrolls'


def learner_loop(create_env_fn: Callable[[int, Any], Any],
                 create_agent_fn: Callable[..., tf.keras.Model],
                 create_optimizer_fn: Callable[[int], Any],
                 config: Union[config_lib.R2D2Config, flags.FlagValues, None] = None
                 ) -> None:
  """Trains an R2D2 agent, serving inference to actors until the frame budget is spent.

  Args:
    create_env_fn: `(env_id, config) -> env` with a Discrete action space; called once for
      the spaces.
    create_agent_fn: `(env_output_specs, num_actions) -> agent`, called as
      `agent((prev_actions, env_outputs), agent_state, unroll=False)` returning
      `(AgentOutput(action, q_values), new_agent_state)`, with `initial_state(batch_size)`.
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: an `R2D2Config`, or absl flags (`FLAGS` by default) that define the flags of
      `learner_flags`, read with `R2D2Config.from_flags`.
  """
  config = config_lib.R2D2Config.of(config)
  learner_runtime.run(R2D2Agent(create_agent_fn, config), create_env_fn, create_optimizer_fn,
                      config)
