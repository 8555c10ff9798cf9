"""The inference function the learner serves, and the per-environment state it keeps.

For each batch of actor steps it detects actor restarts, counts episode statistics, runs the
agent's policy for one step with the recurrent state and previous action kept per environment,
lets the agent explore, cuts the training environments' steps into unrolls and queues every
completed one (blocking when the queue is full: back-pressure on the actors).
"""

import collections
from typing import Any, Callable, Tuple

import tensorflow as tf

from seed_rl.common import specs as specs_lib
from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import env_state
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.learner_runtime import restarts
from seed_rl.common.training import tensors

# One unroll as training sees it: the recurrent state before its first step, then `[T+1, ...]`
# (plus `burn_in`) steps of previous action, env output and agent output.
Unroll = collections.namedtuple('Unroll', 'agent_state prev_actions env_outputs agent_outputs')

# Specs of one row of what the learner handles.
Specs = collections.namedtuple('Specs', 'action env_output agent_state agent_output')


class EnvStates(tf.Module):
  """The learner's state of every environment: run id, recurrent state, previous action and,
  for the training environments (ids below `num_training_envs`), the partial unroll with the
  recurrent state at its start."""

  def __init__(self, num_envs: int, num_training_envs: int, unroll_length: int,
               burn_in: int, specs: Specs, iterations: tf.Variable):
    """`iterations` is the learner's count of training iterations: the version of the policy
    that acts, with which each unroll is stamped."""
    super().__init__(name='env_states')
    self._iterations = iterations
    self.num_training_envs = num_training_envs
    self.run_ids = env_state.PerEnvState(num_envs, tf.TensorSpec([], tf.int64), 'env_run_ids')
    self._agent_states = env_state.PerEnvState(num_envs, specs.agent_state, 'agent_states')
    self._actions = env_state.PerEnvState(num_envs, specs.action, 'actions')
    self._store = env_state.UnrollStore(
        num_training_envs, unroll_length, (specs.action, specs.env_output, specs.agent_output),
        num_overlapping_steps=burn_in)
    # The recurrent state before the first step of each training env's current unroll, and
    # before the first step of its next one (with burn-in, `burn_in` steps before the end).
    self._first_agent_states = env_state.PerEnvState(num_training_envs, specs.agent_state,
                                                     'first_agent_states')
    self._next_first_agent_states = env_state.PerEnvState(num_training_envs, specs.agent_state,
                                                          'next_first_agent_states')
    # The iteration at which the first trained step of each training env's unroll was acted.
    self._first_step_iterations = env_state.PerEnvState(
        num_training_envs, tf.TensorSpec([], tf.int64), 'first_step_iterations')
    self.unroll_specs = Unroll(specs.agent_state, *self._store.unroll_specs)
    # Batches run concurrently, and calls for the same env ids (a client repeating another's)
    # must not interleave the read-modify-write of an env's position in its unroll.
    self._unroll_lock = tf.CriticalSection(name='unroll_lock')

  def reset(self, env_ids, initial_state: Callable[[Any], Any]) -> None:
    """Starts the state of `env_ids` afresh: new actor, no history."""
    self._agent_states.replace(env_ids, initial_state(tf.size(env_ids)))
    self._actions.reset(env_ids)
    training_ids = tensors.select_rows(env_ids, env_ids < self.num_training_envs)
    initial_states = initial_state(tf.size(training_ids))

    def reset_unrolls():
      self._store.reset(training_ids)
      self._first_agent_states.replace(training_ids, initial_states)
      self._next_first_agent_states.replace(training_ids, initial_states)
      self._first_step_iterations.replace(training_ids, self._fill_iteration(training_ids))
      return tf.constant(0)

    self._unroll_lock.execute(reset_unrolls)

  @tf.autograph.experimental.do_not_convert
  def read(self, env_ids):
    """`(prev_actions, agent_states)` of `env_ids`."""
    return self._actions.read(env_ids), self._agent_states.read(env_ids)

  @tf.autograph.experimental.do_not_convert
  def update(self, env_ids, actions, agent_states) -> None:
    self._actions.replace(env_ids, actions)
    self._agent_states.replace(env_ids, agent_states)

  @tf.autograph.experimental.do_not_convert
  def _fill_iteration(self, env_ids) -> tf.Tensor:
    return tf.fill(tf.shape(env_ids), tf.cast(self._iterations, tf.int64))

  @tf.autograph.experimental.do_not_convert
  def append(self, env_ids, prev_agent_states, step) -> Tuple[Unroll, tf.Tensor]:
    """Appends one step of each training env among `env_ids`; returns the completed unrolls
    and, for each, the training iteration at which its first trained step was acted (its last
    step is acted now).

    Args:
      env_ids: `[N]` environment ids.
      prev_agent_states: the recurrent states before this step, `[N, ...]`.
      step: `(prev_actions, env_outputs, agent_outputs)`, each `[N, ...]`.
    """
    env_ids, prev_agent_states, step = tensors.select_rows(
        (env_ids, prev_agent_states, step), env_ids < self.num_training_envs)
    return self._unroll_lock.execute(
        lambda: self._append_training_steps(env_ids, prev_agent_states, step))

  @tf.autograph.experimental.do_not_convert
  def _append_training_steps(self, env_ids, prev_agent_states, step) -> Tuple[Unroll, tf.Tensor]:
    starts_next = self._store.starts_next_unroll(env_ids)
    self._next_first_agent_states.replace(
        *tensors.select_rows((env_ids, prev_agent_states), starts_next))
    completed_ids, unrolls = self._store.append(env_ids, step)

    def start_next_unrolls():
      first_agent_states = self._first_agent_states.read(completed_ids)
      self._first_agent_states.replace(completed_ids,
                                       self._next_first_agent_states.read(completed_ids))
      # Consecutive unrolls share their boundary step, the first one the next unroll trains on.
      first_step_iterations = self._first_step_iterations.read(completed_ids)
      self._first_step_iterations.replace(completed_ids, self._fill_iteration(completed_ids))
      return first_agent_states, first_step_iterations

    def none_completed():
      return tensors.empty_rows((self.unroll_specs.agent_state,
                                 tf.TensorSpec([], tf.int64)))

    first_agent_states, first_step_iterations = tf.cond(
        tf.size(completed_ids) > 0, start_next_unrolls, none_completed)
    return Unroll(first_agent_states, *unrolls), first_step_iterations


@tf.autograph.experimental.do_not_convert
def _finite_rows(nest) -> tf.Tensor:
  """`<bool>[N]`: whether every floating-point value of row n of every leaf is finite."""
  leaves = [t for t in tf.nest.flatten(nest) if t.dtype.is_floating]
  rows = tf.shape(tf.nest.flatten(nest)[0])[0]
  finite = tf.ones([rows], tf.bool)
  for leaf in leaves:
    finite &= tf.reduce_all(tf.reshape(tf.math.is_finite(leaf), [rows, -1]), axis=1)
  return finite


def create_inference_fn(agent: agent_lib.LearnerAgent, env_states: EnvStates,
                        stats: episodes.EpisodeStats, unroll_queue, specs: Specs,
                        batch_size: int, num_action_repeats: int, device: str):
  """The tf.function bound as `inference(env_ids, run_ids, env_outputs, raw_rewards)`,
  running the policy on `device`; returns one action per row of the batch."""

  @tf.function(input_signature=specs_lib.inference_input_specs(batch_size, specs.env_output))
  def inference(env_ids, run_ids, env_outputs, raw_rewards):
    envs_needing_reset, kept_rows, env_ids, (env_outputs, raw_rewards) = (
        restarts.detect_restarts(env_states.run_ids, env_ids, run_ids,
                                 (env_outputs, raw_rewards)))
    def reset_restarted_envs():
      stats.reset(envs_needing_reset)
      env_states.reset(envs_needing_reset, agent.initial_state)
    tensors.run_if_any(envs_needing_reset, reset_restarted_envs)
    if not agent.supports_abandoned_episodes:  # It takes them as terminal.
      env_outputs = env_outputs._replace(abandoned=tf.zeros_like(env_outputs.abandoned))
    stats.update(env_ids, env_outputs, raw_rewards, num_action_repeats)

    prev_actions, prev_agent_states = env_states.read(env_ids)
    run_policy = lambda: agent.policy(prev_actions, env_outputs, prev_agent_states)
    with tf.device(device):
      if agent.inference_gate is None:
        agent_outputs, agent_states = run_policy()
      else:
        agent_outputs, agent_states = agent.inference_gate.around(run_policy)
    agent_outputs = agent.explore(env_ids, agent_outputs)
    # A row whose outputs are not finite (inputs of absurd magnitude) is neither stored nor
    # kept: its environment starts afresh, as after an actor restart, and gets action 0.
    finite = _finite_rows((agent_outputs, agent_states))
    tensors.run_if_any(tf.logical_not(finite), lambda: env_states.reset(
        tensors.select_rows(env_ids, ~finite), agent.initial_state))
    kept_rows, env_ids, prev_agent_states, step, agent_states = tensors.select_rows(
        (kept_rows, env_ids, prev_agent_states, (prev_actions, env_outputs, agent_outputs),
         agent_states), finite)
    unrolls, first_step_iterations = env_states.append(env_ids, prev_agent_states, step)
    tensors.run_if_any(first_step_iterations,
                       lambda: unroll_queue.enqueue_many(unrolls, first_step_iterations))
    env_states.update(env_ids, step[2].action, agent_states)
    # Dropped rows (a dead actor's last call) get action 0; nobody waits for them.
    return restarts.scatter_rows(kept_rows, step[2].action, batch_size)

  return inference
