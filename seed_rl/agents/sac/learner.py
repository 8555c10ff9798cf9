"""SAC learner with central inference (Haarnoja et al. 2018, in SEED RL).

The learner runtime serves the actors and cuts each environment's steps into unrolls of
`unroll_length + 1` steps (`her_window_length + 1` with hindsight replay); this agent samples
actions from its policy, moves `batch_size / replay_ratio` new unrolls per training step into a
replay sampled uniformly, and trains the soft actor-critic loss (`learning`) with target networks
updated by Polyak averaging every `update_target_every_n_step` steps.
"""

import collections
from typing import Any, Callable, Union

from absl import flags
import tensorflow as tf

from seed_rl.agents.sac import config as config_lib
from seed_rl.agents.sac.learning import compute_loss  # The original's public name.
from seed_rl.common import learner_runtime
from seed_rl.common import parametric_distribution
from seed_rl.common import specs as specs_lib
from seed_rl.common.training import replay as replay_lib
from seed_rl.common.training import tensors
from seed_rl.common.training.entropy_cost import EntropyCost

# What the SAC policy gives the actors.
AgentOutput = collections.namedtuple('AgentOutput', 'action')


def get_replay_insertion_batch_size(config: Any = None) -> int:
  """New unrolls inserted per training step: batch_size / replay_ratio, in windows of
  `her_window_length` steps (instead of `unroll_length`) with hindsight replay. `config`: a
  `SACConfig` or absl flags (`FLAGS` by default)."""
  config = config_lib.SACConfig.of(config)
  insertion = config.batch_size / config.replay_ratio
  if config.her_window_length:
    insertion *= config.unroll_length / config.her_window_length
  return int(insertion)


def _validate_config(config: config_lib.SACConfig) -> None:
  insertion = get_replay_insertion_batch_size(config)
  if insertion < 1:
    raise ValueError(f'batch_size / replay_ratio (= {config.batch_size} / '
                     f'{config.replay_ratio}) must be at least 1 unroll per training step.')
  if config.num_envs - config.num_eval_envs + config.unroll_queue_max_size < insertion:
    raise ValueError(
        f'A training step takes {insertion} new unrolls, but training environments plus '
        f'--unroll_queue_max_size (={config.unroll_queue_max_size}) hold fewer: raise '
        '--unroll_queue_max_size or --replay_ratio.')
  if config.her_window_length and config.her_window_length < config.unroll_length:
    raise ValueError(f'her_window_length (={config.her_window_length}) must be at least '
                     f'unroll_length (={config.unroll_length}).')
  for name, value in [('replay_buffer_size', config.replay_buffer_size),
                      ('update_target_every_n_step', config.update_target_every_n_step)]:
    if value <= 0:
      raise ValueError(f'{name} must be positive, got {value}.')
  if not 0. <= config.polyak <= 1.:
    raise ValueError(f'polyak must be in [0, 1], got {config.polyak}.')


def _goal_reward_fn(env) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
  """A GoalEnv's `compute_reward(achieved_goal, desired_goal, info)` as a TF function."""
  if not hasattr(env, 'compute_reward'):
    raise ValueError('--her_window_length needs a GoalEnv: its environment has no '
                     'compute_reward(achieved_goal, desired_goal, info).')
  return replay_lib.numpy_reward_fn(
      lambda achieved_goal, desired_goal: env.compute_reward(achieved_goal, desired_goal, {}))


class SACAgent(learner_runtime.LearnerAgent):
  """The SAC agent's part of the learner: sampled actions, uniform replay (with hindsight goal
  substitution when `her_window_length` is set), soft actor-critic loss, Polyak targets."""
  name = 'SAC'
  supports_abandoned_episodes = True

  def __init__(self, create_agent_fn: Callable[..., tf.keras.Model],
               create_env_fn: Callable[[int, Any], Any], config: config_lib.SACConfig):
    super().__init__(config)
    self._create_agent_fn = create_agent_fn
    self._create_env_fn = create_env_fn
    self._distribution = None
    self._target_network = None
    self._entropy_cost = None
    self._replay = None

  def validate_config(self) -> None:
    _validate_config(self.config)

  def unroll_length(self) -> int:
    return self.config.her_window_length or self.config.unroll_length

  def unrolls_per_iteration(self) -> int:
    return get_replay_insertion_batch_size(self.config)

  def create_networks(self, action_space, observation_space, env_output_specs) -> None:
    self._distribution = (
        parametric_distribution.get_parametric_distribution_for_action_space(action_space))
    self.network = self._create_agent_fn(action_space, observation_space, self._distribution)
    self._target_network = self._create_agent_fn(action_space, observation_space,
                                                 self._distribution)
    zeros = specs_lib.zeros_for(
        (self.action_spec(action_space), env_output_specs, self.action_spec(action_space)), 1)
    for network in (self.network, self._target_network):  # Creates every variable.
      network.get_V(zeros[0], zeros[1], network.initial_state(1))
      network.get_Q(zeros[0], zeros[1], network.initial_state(1), action=zeros[2])
      network.get_action_params(zeros[0], zeros[1], network.initial_state(1))
    self._entropy_cost = EntropyCost(self.config.entropy_cost,
                                     self.config.entropy_cost_adjustment_speed)
    self._update_target_network(0.)

  def policy(self, prev_actions, env_outputs, agent_state):
    action, new_agent_state = self.network(prev_actions, env_outputs, agent_state)
    return AgentOutput(action), new_agent_state

  def greedy_policy(self, prev_actions, env_outputs, agent_state):
    _, new_agent_state = self.network(prev_actions, env_outputs, agent_state)
    params = self.network.get_action_params(prev_actions, env_outputs, agent_state)
    return AgentOutput(self._distribution(params).mode()), new_agent_state

  @property
  def trainable_variables(self):
    return list(self.network.trainable_variables) + [self._entropy_cost.param]

  def checkpointed(self):
    return dict(agent=self.network, target_agent=self._target_network,
                entropy_cost=self._entropy_cost)

  def prepare_training(self, unroll_queue) -> None:
    super().prepare_training(unroll_queue)
    specs, size = unroll_queue.specs, self.config.replay_buffer_size
    replay_lib.check_replay_memory(specs, size)
    if self.config.her_window_length:
      env = self._create_env_fn(0, self.config.env_config)
      self._replay = replay_lib.HindsightExperienceReplay(
          size, specs, 0., _goal_reward_fn(env), self.config.unroll_length,
          self.config.her_substitution_probability)
    else:
      self._replay = replay_lib.PrioritizedReplay(size, specs, 0.)

  @tf.function
  def _update_target_network(self, polyak):
    for target_variable, variable in zip(self._target_network.variables,
                                         self.network.variables):
      target_variable.assign(polyak * target_variable + (1. - polyak) * variable)

  @tf.function
  def _insert_and_sample(self):
    """Moves new unrolls into the replay (until it holds a batch), then samples uniformly.

    Runs in the training thread only: the replay is not thread-safe.
    """
    insertion_batch_size = self.unrolls_per_iteration()
    self._insert(self.unroll_queue.dequeue_many(insertion_batch_size))
    while self._replay.num_inserted < self.config.batch_size:
      self._insert(self.unroll_queue.dequeue_many(insertion_batch_size))
    _, _, unrolls = self._replay.sample(self.config.batch_size, 0.)
    return unrolls

  def _insert(self, unrolls) -> None:
    self._replay.insert(unrolls, tf.ones([tf.shape(unrolls.prev_actions)[0]]))

  def training_step(self, minimize, iteration) -> None:
    if iteration % self.config.update_target_every_n_step == 0:
      self._update_target_network(self.config.polyak)
    minimize(self._insert_and_sample())

  def compute_loss(self, unrolls):
    time_major = tensors.make_time_major(unrolls._replace(agent_state=()))
    return compute_loss(self._distribution, self.network, self._target_network,
                        unrolls.agent_state, time_major.prev_actions, time_major.env_outputs,
                        time_major.agent_outputs.action, self._entropy_cost, self.config)

  def write_summaries(self) -> None:
    tf.summary.scalar('buffer/unrolls_inserted', self._replay.num_inserted)


def learner_loop(create_env_fn: Callable[[int, Any], Any],
                 create_agent_fn: Callable[..., tf.keras.Model],
                 create_optimizer_fn: Callable[[int], Any],
                 config: Union[config_lib.SACConfig, flags.FlagValues, None] = None
                 ) -> None:
  """Trains a SAC agent, serving inference to actors until the frame budget is spent.

  Args:
    create_env_fn: `(env_id, config) -> env` with a Box action space (a GoalEnv with
      `--her_window_length`); called once for the spaces, and once for `compute_reward` (HER).
    create_agent_fn: `(action_space, observation_space, parametric_action_distribution) ->
      agent` with `get_action_params`, `get_V`, `get_Q` (see `networks`), called as
      `agent(prev_actions, env_outputs, core_state)` returning `(action, new_core_state)`.
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: a `SACConfig`, or absl flags (`FLAGS` by default) that define the flags of
      `learner_flags`, read with `SACConfig.from_flags`.
  """
  config = config_lib.SACConfig.of(config)
  learner_runtime.run(SACAgent(create_agent_fn, create_env_fn, config), create_env_fn,
                      create_optimizer_fn, config)
