"""R2D2 learner with central inference (Kapturowski et al. 2019, in SEED RL).

Recurrent Q-learning from prioritized replay: the learner runs a recurrent Q-network for the
actors (epsilon-greedy, one epsilon per environment), cuts each environment's stream into
overlapping unrolls (`burn_in` steps to warm up the recurrent state, then `unroll_length` steps
to learn from), gives every unroll an initial priority from its own TD errors, and trains a
double-Q, n-step, value-rescaled loss on unrolls sampled by priority, with a target network
copied every `update_target_every_n_step` steps. Evaluation environments (the `num_eval_envs`
highest ids) act with `eval_epsilon` and never enter the replay.
"""

import collections
import math
import os
import threading
from typing import Any, Callable

from absl import flags
from absl import logging
import tensorflow as tf

from seed_rl.common import learner_utils
from seed_rl.common import utils

FLAGS = flags.FLAGS

Unroll = collections.namedtuple(
    'Unroll', 'agent_state priority prev_actions env_outputs agent_outputs')


# ------------------------------------------------------------------------------------------------
# Configuration helpers (names of the original).


def get_replay_insertion_batch_size(per_replica: bool = False, config: Any = None) -> int:
  """New unrolls inserted into the replay per training step: batch_size / replay_ratio."""
  config = FLAGS if config is None else config
  if per_replica:
    return int(config.batch_size / config.replay_ratio / config.num_training_tpus)
  return int(config.batch_size / config.replay_ratio)


def get_num_training_envs(config: Any = None) -> int:
  config = FLAGS if config is None else config
  return config.num_envs - config.num_eval_envs


def is_training_env(env_id, config: Any = None):
  """Environments below `num_envs - num_eval_envs` train; the others evaluate."""
  return env_id < get_num_training_envs(config)


# ------------------------------------------------------------------------------------------------
# Exploration.


def get_envs_epsilon(env_ids, num_training_envs: int, num_eval_envs: int, eval_epsilon: float):
  """Per-environment epsilon: 0.4^(1 + 7 i / (n - 1)) for training env i (0.4 to 0.4^8, as in
  Ape-X and R2D2), `eval_epsilon` for evaluation environments."""
  training = tf.pow(0.4, tf.linspace(1., 8., num_training_envs))
  epsilons = tf.concat([training, tf.fill([num_eval_envs], tf.cast(eval_epsilon, tf.float32))],
                       axis=0)
  return tf.gather(epsilons, env_ids)


def apply_epsilon_greedy(actions, env_ids, num_training_envs: int, num_eval_envs: int,
                         eval_epsilon: float, num_actions: int):
  """Replaces each action by a uniformly random one with its environment's epsilon."""
  batch_size = tf.shape(actions)[0]
  epsilons = get_envs_epsilon(env_ids, num_training_envs, num_eval_envs, eval_epsilon)
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


def n_step_bellman_target(rewards, done, q_target, gamma: float, n_steps: int):
  """n-step targets `sum_{i<k} gamma^i r[t+i] + gamma^k q_target[t+k-1]`, k = min(n, T - t).

  Terms after an episode end (a `done` at t+i stops the sum after r[t+i] and drops the
  bootstrap) are masked out; near the end of the sequence the horizon shrinks. Reward and done
  at index t belong to the transition into step t, and q_target[t] is the value at step t.

  Args:
    rewards, done, q_target: `[T, B]`.
    gamma: discount.
    n_steps: horizon n >= 1.

  Returns:
    `[T, B]` targets.
  """
  rewards = tf.convert_to_tensor(rewards, tf.float32)
  not_done = 1. - tf.cast(done, tf.float32)
  q_target = tf.convert_to_tensor(q_target, tf.float32)
  time_index = tf.range(tf.shape(rewards)[0])[:, tf.newaxis]
  num_steps = tf.shape(rewards)[0]
  target = tf.zeros_like(rewards)
  bootstrap = tf.zeros_like(rewards)
  coefficient = tf.ones_like(rewards)  # gamma^i times the not-done flags crossed so far.
  for i in range(n_steps):
    available = time_index + i < num_steps
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
      env_outputs.reward, env_outputs.done, target_q, gamma, n_steps))
  # The target of Q at step t uses the reward and done flag stored with step t+1.
  bellman_target = value_function_rescaling(bellman_target[1:],
                                            value_function_rescaling_epsilon)
  td_error = bellman_target - replay_q[:-1]
  abs_td_error = tf.abs(td_error)
  priorities = (eta * tf.reduce_max(abs_td_error, axis=0) +
                (1 - eta) * tf.reduce_mean(abs_td_error, axis=0))
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
        _, agent_outputs) = [utils.split_structure(nest, burn_in)
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


# ------------------------------------------------------------------------------------------------
# Learner.


def _validate_config(config) -> None:
  utils.validate_learner_config(config)
  if config.num_envs <= config.num_eval_envs:
    raise ValueError(
        f'Every environment is an evaluation environment (num_envs={config.num_envs}, '
        f'num_eval_envs={config.num_eval_envs}): nothing would enter the replay buffer and '
        'training would wait forever. Use num_eval_envs < num_envs.')
  if config.n_steps < 1:
    raise ValueError(f'n_steps must be at least 1, got {config.n_steps}.')
  if config.burn_in < 0:
    raise ValueError(f'burn_in must be non-negative, got {config.burn_in}.')
  if get_replay_insertion_batch_size(config=config) < 1:
    raise ValueError(
        f'batch_size / replay_ratio (= {config.batch_size} / {config.replay_ratio}) must be at '
        'least 1: it is the number of new unrolls per training step.')
  if config.batch_size % max(1, len(tf.config.list_logical_devices('GPU'))) != 0:
    raise ValueError(f'batch_size (={config.batch_size}) must be a multiple of the number of '
                     'GPUs, which share each batch.')
  for name in ('batch_size', 'unroll_length', 'replay_buffer_size', 'unroll_queue_max_size',
               'update_target_every_n_step', 'save_checkpoint_secs', 'log_episode_frequency'):
    if getattr(config, name) <= 0:
      raise ValueError(f'{name} must be positive, got {getattr(config, name)}.')


def _available_memory_bytes() -> int:
  """Memory the system can give without swapping (MemAvailable), or free pages."""
  try:
    with open('/proc/meminfo') as f:
      for line in f:
        if line.startswith('MemAvailable:'):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')


def check_replay_memory(unroll_specs, replay_buffer_size: int) -> int:
  """Logs the replay's memory and refuses one that does not fit (before allocating it).

  Returns the bytes of one stored unroll.
  """
  bytes_per_unroll = sum(spec.shape.num_elements() * spec.dtype.size
                         for spec in tf.nest.flatten(unroll_specs))
  total = bytes_per_unroll * replay_buffer_size
  available = _available_memory_bytes()
  logging.info('Replay buffer: %d bytes per unroll, %.3f GB for replay_buffer_size=%d '
               '(%.1f GB available).', bytes_per_unroll, total / 1e9, replay_buffer_size,
               available / 1e9)
  if total > available:
    raise ValueError(
        f'The replay buffer needs {total / 1e9:.2f} GB ({replay_buffer_size} unrolls of '
        f'{bytes_per_unroll} bytes) but only {available / 1e9:.2f} GB of memory is available. '
        'Lower --replay_buffer_size (or --unroll_length / --burn_in).')
  return bytes_per_unroll


def learner_loop(create_env_fn: Callable[[int, Any], Any],
                 create_agent_fn: Callable[..., tf.keras.Model],
                 create_optimizer_fn: Callable[[int], Any],
                 config: Any = None) -> None:
  """Trains an R2D2 agent, serving inference to actors until the frame budget is spent.

  Args:
    create_env_fn: `(task, config) -> env` with a Discrete action space; called once for specs.
    create_agent_fn: `(env_output_specs, num_actions) -> agent`, called as
      `agent((prev_actions, env_outputs), agent_state, unroll=False)` returning
      `(AgentOutput(action, q_values), new_agent_state)`, with `initial_state(batch_size)`.
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: the flags of `learner_flags` and `common_flags` (absl `FLAGS` by default).
  """
  config = FLAGS if config is None else config
  _validate_config(config)
  with utils.stop_requested_on_signals() as stop_requested:
    _train(create_env_fn, create_agent_fn, create_optimizer_fn, config, stop_requested)


def _train(create_env_fn, create_agent_fn, create_optimizer_fn, config,
           stop_requested: threading.Event) -> None:
  """The body of `learner_loop`; returns when `stop_requested` is set or training is done."""
  if config.seed is not None:
    tf.random.set_seed(config.seed)
  strategy, inference_devices, training_strategy, _, _ = utils.init_learner(
      config.num_training_tpus)
  if training_strategy is not strategy:
    raise NotImplementedError('The R2D2 learner trains on all devices of its strategy; a '
                              'separate TPU training strategy is not supported.')

  env = create_env_fn(0, config)
  action_space, observation_space = env.action_space, env.observation_space
  env.close()
  if not hasattr(action_space, 'n'):
    raise ValueError(f'R2D2 needs a Discrete action space, got {action_space}.')
  num_actions = int(action_space.n)
  env_output_specs = learner_utils.env_output_specs_for(observation_space)
  action_specs = tf.TensorSpec([], tf.int32, 'action')
  num_training_envs = get_num_training_envs(config)
  num_envs = config.num_envs
  loss_kwargs = dict(n_steps=config.n_steps,
                     value_function_rescaling_epsilon=config.value_function_rescaling_epsilon)

  with strategy.scope():
    agent = create_agent_fn(env_output_specs, num_actions)
    target_agent = create_agent_fn(env_output_specs, num_actions)
  initial_agent_state = agent.initial_state(1)
  agent_state_specs = learner_utils.specs_without_batch(initial_agent_state)
  zero_inputs = tf.nest.map_structure(lambda s: tf.zeros([1] + s.shape.as_list(), s.dtype),
                                      (action_specs, env_output_specs))
  with strategy.scope():
    initial_agent_output, _ = agent(zero_inputs, initial_agent_state)
    target_agent(zero_inputs, initial_agent_state)
  agent_output_specs = learner_utils.specs_without_batch(initial_agent_output)

  @tf.function
  def update_target_agent():
    for target_variable, variable in zip(target_agent.trainable_variables,
                                         agent.trainable_variables):
      target_variable.assign(variable)

  insertion_batch_size = get_replay_insertion_batch_size(config=config)
  iter_frame_ratio = insertion_batch_size * config.unroll_length * config.num_action_repeats
  final_iteration = int(math.ceil(config.total_environment_frames / iter_frame_ratio))
  with strategy.scope():
    optimizer, learning_rate_fn = create_optimizer_fn(final_iteration)
    optimizer.build(agent.trainable_variables)
  iterations = optimizer.iterations

  def current_iteration() -> int:
    return int(iterations.numpy())

  checkpoint = tf.train.Checkpoint(agent=agent, target_agent=target_agent, optimizer=optimizer)
  manager, resumed = learner_utils.restore_checkpoint(checkpoint, config.logdir)

  def save_checkpoint():
    logging.info('Saving checkpoint at iteration %d', current_iteration())
    manager.save(checkpoint_number=current_iteration())

  checkpointer = learner_utils.PeriodicCheckpointer(save_checkpoint,
                                                    config.save_checkpoint_secs, resumed)
  summary_writer = tf.summary.create_file_writer(config.logdir, flush_millis=20000,
                                                 max_queue=1000)
  logger = utils.ProgressLogger(summary_writer=summary_writer,
                                starting_step=current_iteration() * iter_frame_ratio)

  # Learner-side state of every environment; only training environments have unrolls.
  store = utils.UnrollStore(num_training_envs, config.unroll_length,
                            (action_specs, env_output_specs, agent_output_specs),
                            num_overlapping_steps=config.burn_in)
  unroll_specs = Unroll(agent_state_specs, tf.TensorSpec([], tf.float32, 'priority'),
                        *store.unroll_specs)
  check_replay_memory(unroll_specs, config.replay_buffer_size)
  env_run_ids = utils.Aggregator(num_envs, tf.TensorSpec([], tf.int64, 'run_ids'),
                                 'env_run_ids')
  episode_stats = learner_utils.EpisodeStats(num_envs)
  agent_states = utils.Aggregator(num_envs, agent_state_specs, 'agent_states')
  # The recurrent state at the first step of each training env's current unroll, and at the
  # first step of its next one (which, with burn-in, comes `burn_in` steps before the end).
  first_agent_states = utils.Aggregator(num_training_envs, agent_state_specs,
                                        'first_agent_states')
  next_first_agent_states = utils.Aggregator(num_training_envs, agent_state_specs,
                                             'next_first_agent_states')
  actions = utils.Aggregator(num_envs, action_specs, 'actions')
  unroll_queue = utils.StructuredFIFOQueue(config.unroll_queue_max_size, unroll_specs)
  replay = utils.PrioritizedReplay(config.replay_buffer_size, unroll_specs,
                                   config.importance_sampling_exponent)

  def initial_priorities(unrolls):
    """Priorities of new unrolls from the TD errors of the acting network's own q-values."""
    env_outputs, agent_outputs = utils.make_time_major((unrolls[1], unrolls[2]))
    _, (env_outputs, agent_outputs) = utils.split_structure((env_outputs, agent_outputs),
                                                            config.burn_in)
    _, priorities = compute_loss_and_priorities_from_agent_outputs(
        agent_outputs, agent_outputs, env_outputs, agent_outputs, config.discounting,
        **loss_kwargs)
    return priorities

  batch = config.inference_batch_size

  def create_inference_fn(inference_device):

    @tf.function(input_signature=learner_utils.inference_input_specs(batch, env_output_specs))
    def inference(env_ids, run_ids, env_outputs, raw_rewards):
      envs_needing_reset, kept_rows, env_ids, (env_outputs, raw_rewards) = (
          learner_utils.detect_restarts(env_run_ids, env_ids, run_ids,
                                        (env_outputs, raw_rewards)))
      training_envs_needing_reset = tf.boolean_mask(
          envs_needing_reset, envs_needing_reset < num_training_envs)
      episode_stats.reset(envs_needing_reset)
      store.reset(training_envs_needing_reset)
      agent_states.replace(envs_needing_reset,
                           agent.initial_state(tf.size(envs_needing_reset)))
      initial_states = agent.initial_state(tf.size(training_envs_needing_reset))
      first_agent_states.replace(training_envs_needing_reset, initial_states)
      next_first_agent_states.replace(training_envs_needing_reset, initial_states)
      actions.reset(envs_needing_reset)

      tf.debugging.assert_equal(
          tf.reduce_any(env_outputs.abandoned), False,
          message='Abandoned done states are not supported in R2D2.')

      episode_stats.update(env_ids, env_outputs, raw_rewards, config.num_action_repeats)

      prev_actions = actions.read(env_ids)
      prev_agent_states = agent_states.read(env_ids)
      with tf.device(inference_device):
        agent_outputs, new_agent_states = agent((prev_actions, env_outputs), prev_agent_states)
      agent_outputs = agent_outputs._replace(action=apply_epsilon_greedy(
          agent_outputs.action, env_ids, num_training_envs, config.num_eval_envs,
          config.eval_epsilon, num_actions))

      # Unrolls of training environments, with initial priorities.
      is_training = env_ids < num_training_envs
      train_ids = tf.boolean_mask(env_ids, is_training)
      train_prev_states = tf.nest.map_structure(lambda t: tf.boolean_mask(t, is_training),
                                                prev_agent_states)
      starts_next = store.starts_next_unroll(train_ids)
      next_first_agent_states.replace(
          tf.boolean_mask(train_ids, starts_next),
          tf.nest.map_structure(lambda t: tf.boolean_mask(t, starts_next), train_prev_states))
      completed_ids, unrolls = store.append(
          train_ids, tf.nest.map_structure(lambda t: tf.boolean_mask(t, is_training),
                                           (prev_actions, env_outputs, agent_outputs)))
      unroll_queue.enqueue_many(Unroll(first_agent_states.read(completed_ids),
                                       initial_priorities(unrolls), *unrolls))
      first_agent_states.replace(completed_ids, next_first_agent_states.read(completed_ids))

      agent_states.replace(env_ids, new_agent_states)
      actions.replace(env_ids, agent_outputs.action)
      return learner_utils.scatter_rows(kept_rows, agent_outputs.action, batch)

    return inference

  server = learner_utils.start_server(
      config, [create_inference_fn(device) for device in inference_devices])

  @tf.function
  def insert_and_sample():
    """Moves new unrolls into the replay (waiting until it holds enough), then samples.

    Runs in the training thread only: the replay is not thread-safe.
    """
    unrolls = unroll_queue.dequeue_many(insertion_batch_size)
    replay.insert(unrolls, unrolls.priority)
    while replay.num_inserted < config.replay_buffer_min_size:
      tf.print('Waiting for the replay buffer to fill up:', replay.num_inserted, '/',
               config.replay_buffer_min_size)
      unrolls = unroll_queue.dequeue_many(insertion_batch_size)
      replay.insert(unrolls, unrolls.priority)
    return replay.sample(config.batch_size, config.priority_exponent)

  num_replicas = strategy.num_replicas_in_sync

  def replica_step(importance_weights, unrolls):
    prev_actions, env_outputs, agent_outputs = utils.make_time_major(
        (unrolls.prev_actions, unrolls.env_outputs, unrolls.agent_outputs))
    with tf.GradientTape() as tape:
      loss_per_unroll, priorities = compute_loss_and_priorities(
          agent, target_agent, unrolls.agent_state, prev_actions, env_outputs, agent_outputs,
          config.discounting, config.burn_in, **loss_kwargs)
      loss = tf.reduce_mean(loss_per_unroll * importance_weights)
      scaled_loss = loss / num_replicas  # Gradients are summed over replicas.
    gradients = tape.gradient(scaled_loss, agent.trainable_variables)
    gradient_norm = tf.linalg.global_norm(gradients)
    if config.clip_norm:
      gradients, _ = tf.clip_by_global_norm(gradients, config.clip_norm,
                                            use_norm=gradient_norm)
    optimizer.apply_gradients(zip(gradients, agent.trainable_variables))
    return loss, priorities, gradient_norm

  @tf.function
  def minimize(importance_weights, unrolls):
    def replica_slice(ctx):
      return tf.nest.map_structure(
          lambda t: tf.split(t, num_replicas)[ctx.replica_id_in_sync_group],
          (importance_weights, unrolls))
    if num_replicas > 1:
      args = strategy.experimental_distribute_values_from_function(replica_slice)
    else:
      args = (importance_weights, unrolls)
    loss, priorities, gradient_norm = strategy.run(replica_step, args)
    local = strategy.experimental_local_results
    priorities = tf.concat(local(priorities), axis=0)
    session = logger.log_session_from_dict({
        'losses/total': tf.reduce_mean(tf.stack(local(loss))),
        'gradient_norm_before_clip': tf.reduce_max(tf.stack(local(gradient_norm))),
        'importance_weights/mean': tf.reduce_mean(importance_weights),
        'priorities/mean': tf.reduce_mean(priorities),
    })
    logger.step_end(session, step_increment=iter_frame_ratio)
    return priorities

  def additional_logs():
    tf.summary.scalar('learning_rate', learning_rate_fn(iterations))
    tf.summary.scalar('replay_buffer_num_inserted', replay.num_inserted)
    tf.summary.scalar('unroll_queue_size', unroll_queue.size())
    infos = episode_stats.dequeue_finished()
    iteration = current_iteration()
    for frames, episode_return, raw_return, env_id in zip(*infos):
      logging.info('Return: %f Raw return: %f Frames: %i Env id: %i (%s) Iteration: %i',
                   episode_return, raw_return, frames, env_id,
                   'training' if env_id < num_training_envs else 'eval', iteration)
    is_eval = infos.env_ids >= num_training_envs
    select = lambda mask: learner_utils.EpisodeInfo(*[t[mask] for t in infos])
    learner_utils.write_episode_summaries(select(~is_eval), config.log_episode_frequency)
    learner_utils.write_episode_summaries(select(is_eval), prefix='eval/')
    learner_utils.log_progress(logger, config.total_environment_frames)

  def train_once():
    if current_iteration() % config.update_target_every_n_step == 0:
      update_target_agent()
    checkpointer.maybe_save()
    indices, importance_weights, unrolls = insert_and_sample()
    priorities = minimize(importance_weights, unrolls)
    replay.update_priorities(indices, priorities)

  learner_utils.serve_and_train(server, logger, additional_logs, train_once,
                                lambda: current_iteration() >= final_iteration, stop_requested,
                                unroll_queue, episode_stats)
  save_checkpoint()
  summary_writer.flush()
  logging.info('Training finished at iteration %d (%d environment frames).',
               current_iteration(), current_iteration() * iter_frame_ratio)
