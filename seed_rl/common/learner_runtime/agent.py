"""What an agent plugs into the learner runtime: its networks, its policy and its training step.

The runtime (`learner_runtime.run`) owns everything that every learner does the same way: devices,
specs, per-environment state and restarts, episode statistics, checkpoints, the exported policy,
summaries and the serve-and-train lifecycle. A `LearnerAgent` subclass brings only its own parts.
The runtime calls them in this order:

1. `validate_config()` before anything starts.
2. `action_spec(action_space)`, then `create_networks(...)` under the strategy's scope; the
   runtime calls `policy` once on a batch of zeros to create the variables and learn the specs.
3. `trainable_variables` (the optimizer's) and `checkpointed()` (what a checkpoint holds).
4. `prepare_training(unroll_queue)` once the unroll specs are known.
5. In every inference batch: `policy`, then `explore`; completed unrolls of the training
   environments go to the unroll queue.
6. In the training thread, until the frame budget is spent: `training_step(minimize, iteration)`,
   where `minimize(batch)` runs `compute_loss` on every replica and applies the gradients
   (one optimizer step; an agent may take several per iteration, e.g. PPO's epochs).
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf

from seed_rl.common import specs as specs_lib

# minimize(batch) -> metrics: one optimizer step on a batch (a nest with a leading batch dim).
Minimize = Callable[[Any], Dict[str, tf.Tensor]]


class LearnerAgent(object):
  """Base class of an agent's part of a learner; see the module docstring for the call order.

  Attributes:
    name: the agent's name in messages, e.g. 'VTRACE'.
    burn_in: steps each unroll repeats from the previous one to warm up the recurrent state.
    clip_norm: global gradient norm clipping of `minimize`; 0 disables it.
    network: the policy network (a Keras model with `initial_state(batch_size)`); the runtime
      exports it and calls its `end_of_training_step_callback` after each step if it has one.
    supports_abandoned_episodes: whether actors may report episodes ended without a terminal
      state (a time limit, whose last state has a value); otherwise the agent receives them as
      terminal (`abandoned` False).
    inference_gate: an `InferenceGate` that inference passes through around the policy, for an
      agent whose training step must not overlap acting (on-policy); None: no gate.
    exploration: how `explore` makes the training environments' actions depart from the
      policy's, e.g. 'epsilon-greedy': their episodes then measure the exploring behaviour, not
      the policy, and the learner's episode lines say so; None: they act on the policy.
  """
  name = 'agent'
  burn_in = 0
  clip_norm = 0.
  supports_abandoned_episodes = False
  inference_gate = None
  exploration: Optional[str] = None

  def __init__(self, config: Any):
    self.config = config
    self.network = None
    self.unroll_queue = None

  def validate_config(self) -> None:
    """Raises ValueError naming what is wrong with the agent's flags."""

  def unroll_length(self) -> int:
    """Agent steps per unroll (plus the bootstrap step, and `burn_in` steps before them)."""
    return self.config.unroll_length

  def unrolls_per_iteration(self) -> int:
    """New unrolls one training step consumes: the learner's frame accounting."""
    return self.config.batch_size

  def minimize_batch_size(self) -> int:
    """Rows of one `minimize` batch, shared by the learner's devices."""
    return self.config.batch_size

  def unroll_queue_capacity(self) -> int:
    """Completed unrolls that may wait for training before inference blocks."""
    return self.config.unroll_queue_max_size

  def optimizer_steps_per_iteration(self) -> int:
    """Optimizer steps of one training iteration (learning-rate schedules span them all)."""
    return 1

  def iteration_counter(self, optimizer: Any) -> tf.Variable:
    """The checkpointed count of training iterations: by default the optimizer's steps."""
    return optimizer.iterations

  def action_spec(self, action_space) -> tf.TensorSpec:
    """Spec of one action (also of the previous action the policy reads)."""
    return specs_lib.tensor_spec_from_gym_space(action_space, 'action')

  def create_networks(self, action_space, observation_space, env_output_specs) -> None:
    """Creates `self.network` and anything else with variables (called under the strategy)."""
    raise NotImplementedError

  def initial_state(self, batch_size):
    """The policy's recurrent state at the start of an episode."""
    return self.network.initial_state(batch_size)

  def policy(self, prev_actions, env_outputs, agent_state) -> Tuple[Any, Any]:
    """`(agent_outputs, new_agent_state)` for one step of `[B, ...]` inputs.

    `agent_outputs` has an `action` field. This is the learned policy the runtime exports; the
    actors get it through `explore`.
    """
    raise NotImplementedError

  def greedy_policy(self, prev_actions, env_outputs, agent_state) -> Tuple[Any, Any]:
    """`policy` acting with the mode of its action distribution (evaluation); exported as
    `get_greedy_action`. By default the policy itself (for agents that act greedily)."""
    return self.policy(prev_actions, env_outputs, agent_state)

  def explore(self, env_ids, agent_outputs):
    """The agent outputs the actors act on (e.g. with per-environment epsilon-greedy)."""
    del env_ids
    return agent_outputs

  @property
  def trainable_variables(self) -> List[tf.Variable]:
    """The variables the optimizer trains."""
    return list(self.network.trainable_variables)

  def checkpointed(self) -> Dict[str, Any]:
    """Trackables a checkpoint holds besides the optimizer (names are checkpoint keys)."""
    return {'agent': self.network}

  def prepare_training(self, unroll_queue) -> None:
    """Receives the queue of completed `Unroll`s; creates replay buffers and the like."""
    self.unroll_queue = unroll_queue

  def training_step(self, minimize: Minimize, iteration: int) -> None:
    """One training iteration: fetch a batch and call `minimize(batch)` once."""
    raise NotImplementedError

  def compute_loss(self, batch) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """`(loss, metrics)` of one replica's slice of a batch, under the runtime's gradient tape.

    Every metric is logged as the mean of its elements; `minimize` returns them to the caller
    (scalars averaged over replicas, per-example values concatenated in batch order).
    """
    raise NotImplementedError

  def write_summaries(self) -> None:
    """Writes the agent's own TensorBoard scalars (called by the logging thread)."""

  def waiting_status(self) -> Optional[str]:
    """What the first training step waits for, e.g. `'replay 1,234/5,000 unrolls'`, or None.

    Called by the logging thread (it must only read state) until the first training step of
    this process; the runtime logs `Waiting for the first training step: <status>` at most every
    few seconds.
    """
    return None


class SampledPolicyAgent(LearnerAgent):
  """An agent acting with actions sampled from its policy's distribution (`self.distribution`,
  a `ParametricDistribution` of `agent_outputs.policy_logits`), and with the distribution's mode
  in evaluation environments (the `num_eval_envs` highest ids) and in the exported greedy
  policy."""
  distribution = None

  def mode(self, agent_outputs):
    """The action of highest probability under the policy that produced `agent_outputs`."""
    mode = self.distribution(agent_outputs.policy_logits).mode()
    return tf.cast(mode, agent_outputs.action.dtype)

  def greedy_policy(self, prev_actions, env_outputs, agent_state):
    agent_outputs, agent_state = self.policy(prev_actions, env_outputs, agent_state)
    return agent_outputs._replace(action=self.mode(agent_outputs)), agent_state

  def explore(self, env_ids, agent_outputs):
    if not self.config.num_eval_envs:
      return agent_outputs
    is_eval = env_ids >= self.config.num_envs - self.config.num_eval_envs
    is_eval = tf.reshape(is_eval, [-1] + [1] * (agent_outputs.action.shape.rank - 1))
    return agent_outputs._replace(
        action=tf.where(is_eval, self.mode(agent_outputs), agent_outputs.action))
