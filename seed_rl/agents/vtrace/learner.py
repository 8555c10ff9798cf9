"""V-trace (IMPALA) learner with central inference (SEED RL, Espeholt et al. 2020).

The learner serves an `inference` function over gRPC: actors send one batch of env steps, the
server groups them into inference batches, and for each batch the learner runs the agent one
step with the recurrent state and previous action it keeps per environment, appends the
transition to that environment's unroll and queues every completed unroll. The training loop
dequeues batches of unrolls and applies V-trace actor-critic updates.
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
from seed_rl.common import parametric_distribution
from seed_rl.common import utils
from seed_rl.common import vtrace

FLAGS = flags.FLAGS

Unroll = collections.namedtuple('Unroll', 'agent_state prev_actions env_outputs agent_outputs')


def compute_loss(logger, parametric_action_distribution, agent, agent_state, prev_actions,
                 env_outputs, agent_outputs, entropy_cost, config):
  """The V-trace actor-critic loss of one batch of time-major unrolls.

  Args:
    logger: `utils.ProgressLogger` collecting the logged values (a session is a list).
    parametric_action_distribution: the action distribution of the policy logits.
    agent: the agent; called with `unroll=True, is_training=True`.
    agent_state: recurrent state at the start of the unrolls, `[B, ...]`.
    prev_actions, env_outputs, agent_outputs: `[T+1, B, ...]`; step t's reward and done flag
      belong to the action of step t-1; agent_outputs hold the behaviour policy's logits.
    entropy_cost: callable returning the current entropy cost.
    config: hyper-parameters `discounting`, `lambda_`, `baseline_cost`, `kl_cost`,
      `max_abs_reward` and `target_entropy`.

  Returns:
    `(total_loss, session)` where `session` lists the logged (name, value) pairs.
  """
  learner_outputs, _ = agent(prev_actions, env_outputs, agent_state, unroll=True,
                             is_training=True)
  bootstrap_value = learner_outputs.baseline[-1]

  # The last step only bootstraps: the transitions are (step t, action t, reward of t+1).
  agent_outputs = tf.nest.map_structure(lambda t: t[:-1], agent_outputs)
  learner_outputs = tf.nest.map_structure(lambda t: t[:-1], learner_outputs)
  rewards = env_outputs.reward[1:]
  done = env_outputs.done[1:]
  if config.max_abs_reward:
    rewards = tf.clip_by_value(rewards, -config.max_abs_reward, config.max_abs_reward)
  discounts = tf.cast(~done, tf.float32) * config.discounting

  target_dist = parametric_action_distribution(learner_outputs.policy_logits)
  behaviour_dist = parametric_action_distribution(agent_outputs.policy_logits)
  target_action_log_probs = target_dist.log_prob(agent_outputs.action)
  behaviour_action_log_probs = behaviour_dist.log_prob(agent_outputs.action)

  vtrace_returns = vtrace.from_importance_weights(
      target_action_log_probs=target_action_log_probs,
      behaviour_action_log_probs=behaviour_action_log_probs,
      discounts=discounts, rewards=rewards, values=learner_outputs.baseline,
      bootstrap_value=bootstrap_value, lambda_=config.lambda_)

  policy_loss = -tf.reduce_mean(target_action_log_probs *
                                tf.stop_gradient(vtrace_returns.pg_advantages))
  v_error = vtrace_returns.vs - learner_outputs.baseline
  v_loss = config.baseline_cost * .5 * tf.reduce_mean(tf.square(v_error))
  entropy = tf.reduce_mean(target_dist.entropy())
  entropy_loss = -tf.stop_gradient(entropy_cost()) * entropy
  kl = behaviour_action_log_probs - target_action_log_probs
  kl_loss = config.kl_cost * tf.reduce_mean(kl)
  if config.target_entropy is not None:
    entropy_adjustment_loss = entropy_cost() * tf.stop_gradient(entropy - config.target_entropy)
  else:
    # Keeps the entropy cost variable in the gradient computation (with a zero gradient).
    entropy_adjustment_loss = 0. * entropy_cost()
  total_loss = policy_loss + v_loss + entropy_loss + kl_loss + entropy_adjustment_loss

  session = logger.log_session()
  logger.log(session, 'V/value function', tf.reduce_mean(learner_outputs.baseline))
  logger.log(session, 'V/L2 error', tf.sqrt(tf.reduce_mean(tf.square(v_error))))
  logger.log(session, 'losses/policy', policy_loss)
  logger.log(session, 'losses/V', v_loss)
  logger.log(session, 'losses/entropy', entropy_loss)
  logger.log(session, 'losses/kl', kl_loss)
  logger.log(session, 'losses/total', total_loss)
  if hasattr(target_dist, 'scale'):
    logger.log(session, 'policy/std', tf.reduce_mean(target_dist.scale))
  logger.log(session, 'policy/max_action_abs(before_tanh)',
             tf.reduce_max(tf.abs(tf.cast(agent_outputs.action, tf.float32))))
  logger.log(session, 'policy/entropy', entropy)
  logger.log(session, 'policy/entropy_cost', entropy_cost())
  logger.log(session, 'policy/kl(old|new)', tf.reduce_mean(kl))
  return total_loss, session


class _EntropyCost(tf.Module):
  """Trainable entropy cost `exp(m * param)`, `m` the adjustment speed.

  Parametrised in log space so that adapting it (with `target_entropy`) is scale-free.
  """

  def __init__(self, initial_cost: float, adjustment_speed: float):
    super().__init__(name='entropy_cost')
    self._speed = adjustment_speed
    self._bound = 20. / adjustment_speed
    self.param = tf.keras.Variable(math.log(initial_cost) / adjustment_speed, dtype='float32',
                                   name='entropy_cost_param')

  def __call__(self):
    return tf.exp(self._speed * tf.convert_to_tensor(self.param))

  def clip(self):
    self.param.assign(tf.clip_by_value(self.param, -self._bound, self._bound))


class _ExportModule(tf.Module):
  """What the learner exports as a SavedModel: the policy for one step, without the learner.

  `get_action(prev_actions, env_outputs, core_state)` and `initial_state(batch_size)`, with the
  same meaning as on the agent; load with `tf.saved_model.load(logdir + '/saved_model')`.
  """

  def __init__(self, agent, action_specs, env_output_specs, agent_state_specs):
    super().__init__(name='exported_agent')
    self.agent = agent
    self.agent_variables = list(agent.variables)
    self.get_action = tf.function(
        lambda prev_actions, env_outputs, core_state: agent(
            prev_actions, env_outputs, core_state, unroll=False, is_training=False),
        input_signature=[learner_utils.leading_dim_specs(action_specs, None),
                         learner_utils.leading_dim_specs(env_output_specs, None),
                         learner_utils.leading_dim_specs(agent_state_specs, None)])
    self.initial_state = tf.function(
        agent.initial_state, input_signature=[tf.TensorSpec([], tf.int32)])

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    # The Keras model itself is not exported (Keras 3 would trace its own signatures); its
    # variables are, through `agent_variables` and the functions that capture them.
    children = super()._trackable_children(save_type, **kwargs)
    children.pop('agent', None)
    return children


def _validate_config(config) -> None:
  utils.validate_learner_config(config)
  for name in ('batch_size', 'unroll_length', 'unroll_queue_max_size',
               'save_checkpoint_secs', 'log_episode_frequency'):
    if getattr(config, name) <= 0:
      raise ValueError(f'{name} must be positive, got {getattr(config, name)}.')
  if config.num_eval_envs:
    raise ValueError('The V-trace learner has no evaluation environments; '
                     f'num_eval_envs must be 0, got {config.num_eval_envs}.')


def learner_loop(create_env_fn: Callable[[int, Any], Any],
                 create_agent_fn: Callable[..., tf.keras.Model],
                 create_optimizer_fn: Callable[[int], Any],
                 config: Any = None) -> None:
  """Trains a V-trace agent, serving inference to actors until the frame budget is spent.

  Args:
    create_env_fn: `(task, config) -> env`; called once for the observation/action spaces.
    create_agent_fn: `(action_space, observation_space, parametric_action_distribution) ->
      agent` (see `networks` for the calling convention).
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: the flags of `learner_flags` and `common_flags` (absl `FLAGS` by default).
  """
  config = FLAGS if config is None else config
  _validate_config(config)
  # Installed first, so that a SIGTERM during start-up still ends in a checkpoint.
  with utils.stop_requested_on_signals() as stop_requested:
    _train(create_env_fn, create_agent_fn, create_optimizer_fn, config, stop_requested)


def _train(create_env_fn, create_agent_fn, create_optimizer_fn, config,
           stop_requested: threading.Event) -> None:
  """The body of `learner_loop`; returns when `stop_requested` is set or training is done."""
  if config.seed is not None:
    tf.random.set_seed(config.seed)
  settings = utils.init_learner(config.num_training_tpus)
  strategy, inference_devices, training_strategy, encode, decode = settings
  if training_strategy is not strategy:
    raise NotImplementedError('The V-trace learner trains on all devices of its strategy; '
                              'a separate TPU training strategy is not supported.')

  env = create_env_fn(0, config)
  action_space, observation_space = env.action_space, env.observation_space
  env.close()
  dist = parametric_distribution.get_parametric_distribution_for_action_space(action_space)
  env_output_specs = learner_utils.env_output_specs_for(observation_space)
  action_specs = utils.tensor_spec_from_gym_space(action_space, 'action')

  # The agent and its variables, created on the strategy's devices.
  with strategy.scope():
    agent = create_agent_fn(action_space, observation_space, dist)
    entropy_cost = getattr(agent, 'entropy_cost', None)
    if entropy_cost is None:
      entropy_cost = _EntropyCost(config.entropy_cost, config.entropy_cost_adjustment_speed)
  initial_agent_state = agent.initial_state(1)
  agent_state_specs = learner_utils.specs_without_batch(initial_agent_state)
  zero_inputs = tf.nest.map_structure(lambda s: tf.zeros([1] + s.shape.as_list(), s.dtype),
                                      (action_specs, env_output_specs))
  with strategy.scope():
    initial_agent_output, _ = agent(*zero_inputs, initial_agent_state)
  agent_output_specs = learner_utils.specs_without_batch(initial_agent_output)
  trainable_variables = list(agent.trainable_variables)
  if isinstance(entropy_cost, _EntropyCost):
    trainable_variables.append(entropy_cost.param)

  # Optimizer and frame accounting: one iteration consumes batch_size unrolls.
  iter_frame_ratio = config.batch_size * config.unroll_length * config.num_action_repeats
  final_iteration = int(math.ceil(config.total_environment_frames / iter_frame_ratio))
  with strategy.scope():
    optimizer, learning_rate_fn = create_optimizer_fn(final_iteration)
    optimizer.build(trainable_variables)
  iterations = optimizer.iterations

  # Checkpoints: the latest in logdir wins over init_checkpoint.
  checkpointed = dict(agent=agent, optimizer=optimizer)
  if isinstance(entropy_cost, _EntropyCost):
    checkpointed['entropy_cost'] = entropy_cost
  checkpoint = tf.train.Checkpoint(**checkpointed)
  manager, resumed = learner_utils.restore_checkpoint(checkpoint, config.logdir,
                                                      config.init_checkpoint)
  export_module = _ExportModule(agent, action_specs, env_output_specs, agent_state_specs)

  def current_iteration() -> int:
    return int(iterations.numpy())

  def save_checkpoint():
    logging.info('Saving checkpoint and SavedModel at iteration %d', current_iteration())
    manager.save(checkpoint_number=current_iteration())
    tf.saved_model.save(export_module, os.path.join(config.logdir, 'saved_model'))

  checkpointer = learner_utils.PeriodicCheckpointer(save_checkpoint,
                                                    config.save_checkpoint_secs, resumed)

  summary_writer = tf.summary.create_file_writer(config.logdir, flush_millis=20000,
                                                 max_queue=1000)
  logger = utils.ProgressLogger(summary_writer=summary_writer,
                                starting_step=current_iteration() * iter_frame_ratio)

  # Learner-side state of every environment.
  num_envs = config.num_envs
  store = utils.UnrollStore(num_envs, config.unroll_length,
                            (action_specs, env_output_specs, agent_output_specs))
  env_run_ids = utils.Aggregator(num_envs, tf.TensorSpec([], tf.int64, 'run_ids'),
                                 'env_run_ids')
  episode_stats = learner_utils.EpisodeStats(num_envs)
  first_agent_states = utils.Aggregator(num_envs, agent_state_specs, 'first_agent_states')
  agent_states = utils.Aggregator(num_envs, agent_state_specs, 'agent_states')
  actions = utils.Aggregator(num_envs, action_specs, 'actions')
  unroll_specs = Unroll(agent_state_specs, *store.unroll_specs)
  unroll_queue = utils.StructuredFIFOQueue(config.unroll_queue_max_size, unroll_specs)

  batch = config.inference_batch_size
  inference_specs = learner_utils.inference_input_specs(batch, env_output_specs)

  def create_inference_fn(inference_device):

    @tf.function(input_signature=inference_specs)
    def inference(env_ids, run_ids, env_outputs, raw_rewards):
      envs_needing_reset, kept_rows, env_ids, (env_outputs, raw_rewards) = (
          learner_utils.detect_restarts(env_run_ids, env_ids, run_ids,
                                        (env_outputs, raw_rewards)))
      episode_stats.reset(envs_needing_reset)
      store.reset(envs_needing_reset)
      initial_states = agent.initial_state(tf.size(envs_needing_reset))
      first_agent_states.replace(envs_needing_reset, initial_states)
      agent_states.replace(envs_needing_reset, initial_states)
      actions.reset(envs_needing_reset)

      tf.debugging.assert_equal(
          tf.reduce_any(env_outputs.abandoned), False,
          message='Abandoned done states are not supported in VTRACE.')

      episode_stats.update(env_ids, env_outputs, raw_rewards, config.num_action_repeats)

      prev_actions = actions.read(env_ids)
      prev_agent_states = agent_states.read(env_ids)
      with tf.device(inference_device):
        agent_outputs, new_agent_states = agent(
            *decode(encode((prev_actions, env_outputs))), prev_agent_states)

      # Completed unrolls start with the state from before their first step.
      completed_ids, unrolls = store.append(env_ids, (prev_actions, env_outputs, agent_outputs))
      unrolls = Unroll(first_agent_states.read(completed_ids), *unrolls)
      unroll_queue.enqueue_many(unrolls)
      first_agent_states.replace(completed_ids, agent_states.read(completed_ids))

      agent_states.replace(env_ids, new_agent_states)
      actions.replace(env_ids, agent_outputs.action)
      # Dropped rows get action 0; nobody waits for them.
      return learner_utils.scatter_rows(kept_rows, agent_outputs.action, batch)

    return inference

  with strategy.scope():
    server = learner_utils.start_server(
        config, [create_inference_fn(device) for device in inference_devices])

  # Training input: batches of unrolls, time-major.
  def dequeue(ctx):
    per_replica = ctx.get_per_replica_batch_size(config.batch_size)
    unrolls = unroll_queue.dequeue_many(per_replica)
    unrolls = unrolls._replace(
        prev_actions=utils.make_time_major(unrolls.prev_actions),
        env_outputs=encode(utils.make_time_major(unrolls.env_outputs)),
        agent_outputs=utils.make_time_major(unrolls.agent_outputs))
    return unrolls

  def dataset_fn(ctx):
    return tf.data.Dataset.from_tensors(0).repeat().map(lambda _: dequeue(ctx))

  dataset = strategy.distribute_datasets_from_function(dataset_fn)
  num_replicas = strategy.num_replicas_in_sync

  logged_names = []  # Filled when train_step is traced; strategy.run returns only tensors.

  def train_step(unrolls):
    unrolls = unrolls._replace(env_outputs=decode(unrolls.env_outputs))
    with tf.GradientTape() as tape:
      loss, session = compute_loss(logger, dist, agent, unrolls.agent_state,
                                   unrolls.prev_actions, unrolls.env_outputs,
                                   unrolls.agent_outputs, entropy_cost, config)
      # Gradients are summed over replicas.
      scaled_loss = loss / num_replicas
    gradients = tape.gradient(scaled_loss, trainable_variables)
    optimizer.apply_gradients(zip(gradients, trainable_variables))
    if isinstance(entropy_cost, _EntropyCost):
      entropy_cost.clip()
    callback = getattr(agent, 'end_of_training_step_callback', None)
    if callback is not None:
      callback()
    logged_names[:] = [name for name, _ in session]
    return [value for _, value in session]

  @tf.function
  def minimize(unrolls):
    values = strategy.run(train_step, (unrolls,))
    logger.step_end(list(zip(logged_names, values)),
                    strategy=strategy if num_replicas > 1 else None,
                    step_increment=iter_frame_ratio)

  def additional_logs():
    tf.summary.scalar('learning_rate', learning_rate_fn(iterations))
    infos = episode_stats.dequeue_finished(config.log_episode_frequency)
    for frames, episode_return, raw_return, _ in zip(*infos):
      logging.info('Return: %f Raw return: %f Frames: %i', episode_return, raw_return, frames)
    learner_utils.write_episode_summaries(infos, config.log_episode_frequency)
    learner_utils.log_progress(logger, config.total_environment_frames)

  def train_once():
    checkpointer.maybe_save()
    # The batch is taken before the step starts, not inside `minimize`: there, ops that do not
    # depend on the data (the optimizer's step counter) could run even when a stop request
    # makes the dequeue fail, counting a step that never happened.
    minimize(next(iterator))

  iterator = iter(dataset)
  learner_utils.serve_and_train(server, logger, additional_logs, train_once,
                                lambda: current_iteration() >= final_iteration, stop_requested,
                                unroll_queue, episode_stats)
  save_checkpoint()
  summary_writer.flush()
  logging.info('Training finished at iteration %d (%d environment frames).',
               current_iteration(), current_iteration() * iter_frame_ratio)
