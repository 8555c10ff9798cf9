"""The learner every agent shares: `run(agent, create_env_fn, create_optimizer_fn, config)`.

It probes the environment for its spaces, creates the agent's networks on the learner's devices,
restores the latest checkpoint, serves the inference function to the actors over gRPC and runs
the agent's training step in a thread until the frame budget is spent or a stop is requested;
then it saves a checkpoint and the exported policy, and says so in one line. At the end of the
budget its actors hear that training finished and stop (`lifecycle`). A learner whose checkpoint
is already at the end of its budget says so, tells the actors waiting for it, and stops.

The logging thread reports what happens: progress and summaries after training steps, finished
episodes (a few lines, every episode in the summaries), what the first training step waits for,
and inference batches that do not fill (`starvation`).
"""

import math
import time
from typing import Any, Callable, Tuple

from absl import logging
import tensorflow as tf

from seed_rl.common import profiling
from seed_rl.common import specs as specs_lib
from seed_rl.common.config import checks
from seed_rl.common.config.learner_config import LearnerConfig
from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import checkpoints
from seed_rl.common.learner_runtime import devices
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.learner_runtime import inference
from seed_rl.common.learner_runtime import input_checks
from seed_rl.common.learner_runtime import lifecycle
from seed_rl.common.learner_runtime import precision
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import run_record
from seed_rl.common.learner_runtime import starvation
from seed_rl.common.learner_runtime import training
from seed_rl.common.learner_runtime import unroll_queue

# Training steps averaged into one point of the `timing/...` summaries.
_TIMING_WINDOW = 20
# Seconds between two lines saying what the first training step waits for.
_WAITING_LINE_PERIOD_SECS = 5.


def validate_config(config: LearnerConfig) -> LearnerConfig:
  """The checks every learner makes before it starts; returns `config` with
  `inference_batch_size=-1` resolved."""
  return checks.validate_runtime_config(config)


def init_devices(config: LearnerConfig) -> devices.Settings:
  """The learner's devices (`devices.init_learner`), with TensorFlow set to compute in the
  config's precision (`precision.apply`): call it before any of the learner's functions runs."""
  settings = devices.init_learner(config.num_training_tpus)
  precision.apply(config.mixed_precision, devices.learner_devices()[0])
  return settings


def _probe_spaces(create_env_fn: Callable[[int, Any], Any], env_config: Any):
  env = create_env_fn(0, env_config)
  try:
    return env.action_space, env.observation_space
  finally:
    env.close()


def create_agent(agent: agent_lib.LearnerAgent, create_env_fn: Callable[[int, Any], Any],
                 strategy: tf.distribute.Strategy, env_config: Any) -> inference.Specs:
  """Creates the agent's networks and variables; returns the specs of what the learner keeps.

  `create_env_fn(0, env_config)` gives the spaces (`env_config`: the config's `env_config`).
  """
  action_space, observation_space = _probe_spaces(create_env_fn, env_config)
  env_output_specs = specs_lib.env_output_specs_for(observation_space)
  action_spec = agent.action_spec(action_space)
  with strategy.scope():
    agent.create_networks(action_space, observation_space, env_output_specs)
    initial_agent_state = agent.initial_state(1)
    zero_inputs = specs_lib.zeros_for((action_spec, env_output_specs), 1)
    initial_agent_output, _ = agent.policy(*zero_inputs, initial_agent_state)
  return inference.Specs(action_spec, env_output_specs,
                         specs_lib.specs_without_batch(initial_agent_state),
                         specs_lib.specs_without_batch(initial_agent_output))


def _create_optimizer(agent: agent_lib.LearnerAgent, create_optimizer_fn: Callable[[int], Any],
                      strategy: tf.distribute.Strategy, final_iteration: int) -> Tuple[Any, Any]:
  """`(optimizer, learning_rate_fn)` with its slots built, so that a checkpoint can restore
  them before the first step."""
  with strategy.scope():
    optimizer, learning_rate_fn = create_optimizer_fn(final_iteration)
    optimizer.build(agent.trainable_variables)
  return optimizer, learning_rate_fn


def run(agent: agent_lib.LearnerAgent, create_env_fn: Callable[[int, Any], Any],
        create_optimizer_fn: Callable[[int], Any], config: LearnerConfig) -> None:
  """Trains `agent`, serving inference to actors until the frame budget is spent.

  Args:
    agent: the agent's own parts.
    create_env_fn: `(env_id, env_config) -> env`, `env_config` being `config.env_config` (the
      flags of an entry point); called once for the observation/action spaces.
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: the learner's typed config: a `LearnerConfig`, usually the agent's subclass of it,
      the one `agent.config` holds.
  """
  if not isinstance(config, LearnerConfig):
    raise TypeError(f'The learner runtime reads a LearnerConfig, got a {type(config).__name__}: '
                    'build one with the agent\'s config class (e.g. '
                    'VTraceConfig.from_flags()).')
  config = validate_config(config)
  agent.validate_config()
  # Installed first, so that a SIGTERM during start-up still ends in a checkpoint.
  with lifecycle.stop_requested_on_signals() as stop_requested:
    _Learner(agent, create_env_fn, create_optimizer_fn, config).run(stop_requested)


class _Learner(object):
  """One learner process: built by the constructor, served and trained by `run`."""

  def __init__(self, agent: agent_lib.LearnerAgent, create_env_fn, create_optimizer_fn,
               config: LearnerConfig):
    run_record.write(config.logdir, config, create_env_fn, agent.name)
    if config.seed is not None:
      tf.random.set_seed(config.seed)
    self._agent, self._config = agent, config
    settings = init_devices(config)
    self._strategy, self._inference_devices = settings.strategy, settings.inference_devices
    batch_size = agent.minimize_batch_size()
    if batch_size % self._strategy.num_replicas_in_sync:
      raise ValueError(f'batch_size (={batch_size}) must be a multiple of the number of '
                       f'devices (={self._strategy.num_replicas_in_sync}), which share each '
                       'batch.')
    self._specs = create_agent(agent, create_env_fn, self._strategy, config.env_config)
    self._frames_per_iteration = (agent.unrolls_per_iteration() * agent.unroll_length() *
                                  config.num_action_repeats)
    self._final_iteration = int(math.ceil(config.total_environment_frames /
                                          self._frames_per_iteration))
    self._optimizer, self._learning_rate_fn = _create_optimizer(
        agent, create_optimizer_fn, self._strategy,
        self._final_iteration * agent.optimizer_steps_per_iteration())
    export = checkpoints.PolicyExport(agent.network, agent.policy, agent.greedy_policy,
                                      agent.initial_state, self._specs)
    self._checkpointer = checkpoints.Checkpointer(
        dict(agent.checkpointed(), optimizer=self._optimizer), export, self._iterations,
        config)
    # A learner restored at the end of its budget has nothing to do (see `run`).
    self.already_finished = self._iteration() >= self._final_iteration
    if self.already_finished:
      return
    self._summary_writer = tf.summary.create_file_writer(config.logdir, flush_millis=20000,
                                                         max_queue=1000)
    self._logger = progress_logger.ProgressLogger(
        summary_writer=self._summary_writer,
        starting_step=self._iteration() * self._frames_per_iteration)
    self._create_env_state()
    self._starvation = None
    self._logged_frames = self._iteration() * self._frames_per_iteration
    self._trained = False  # Whether a training step of this process was logged.
    self._last_waiting_line = time.monotonic()

  @property
  def _iterations(self) -> tf.Variable:
    return self._agent.iteration_counter(self._optimizer)

  def _iteration(self) -> int:
    return int(self._iterations.numpy())

  def _create_env_state(self) -> None:
    config = self._config
    num_training_envs = config.num_envs - config.num_eval_envs
    self._env_states = inference.EnvStates(config.num_envs, num_training_envs,
                                           self._agent.unroll_length(), self._agent.burn_in,
                                           self._specs, self._iterations)
    self._episode_stats = episodes.EpisodeStats(config.num_envs)
    self._episode_reporter = episodes.EpisodeReporter(num_training_envs,
                                                      config.log_episode_frequency,
                                                      exploration=self._agent.exploration)
    self._unroll_queue = unroll_queue.UnrollQueue(self._agent.unroll_queue_capacity(),
                                                  self._env_states.unroll_specs,
                                                  self._iterations)
    self._agent.prepare_training(self._unroll_queue)

  def _start_server(self):
    inference_fns = [
        inference.create_inference_fn(self._agent, self._env_states, self._episode_stats,
                                      self._unroll_queue, self._specs,
                                      self._config.inference_batch_size,
                                      self._config.num_action_repeats, device)
        for device in self._inference_devices]
    check = input_checks.InferenceInputCheck(
        self._config.num_envs, self._specs.env_output, self._agent.name,
        allow_abandoned=self._agent.supports_abandoned_episodes,
        takeover_grace_secs=self._config.actor_takeover_grace_secs,
        refuse_observations_above=self._config.refuse_observations_above,
        refuse_rewards_above=self._config.refuse_rewards_above)
    with self._strategy.scope():
      return lifecycle.start_server(self._config, inference_fns, check)

  def _write_logs(self) -> None:
    """Runs in the logging thread on each of its wake-ups, before it writes the latest step's
    values (when a step ended since the last wake-up), at the current step."""
    now = time.monotonic()
    self._episode_reporter.report(self._episode_stats.dequeue_finished(), self._iteration(),
                                  now)
    if self._starvation is not None:
      self._starvation.check(now)
    frames = int(self._logger.step_cnt.numpy())
    if frames != self._logged_frames:
      self._logged_frames, self._trained = frames, True
      tf.summary.scalar('learning_rate', self._learning_rate_fn(self._optimizer.iterations))
      self._agent.write_summaries()
      self._unroll_queue.write_summaries()
      lag = self._unroll_queue.policy_lag()
      counts = self._logger.counts_summary()
      logging.info('Progress: %d/%d environment frames%s%s', frames,
                   int(self._config.total_environment_frames),
                   f' (policy lag {lag["first_step_mean"]:.1f} iterations, at most '
                   f'{lag["first_step_max"]:.0f})' if lag else '',
                   f'; non-finite: {counts}' if counts else '')
    elif not self._trained and now - self._last_waiting_line >= _WAITING_LINE_PERIOD_SECS:
      status = self._agent.waiting_status()
      if status:
        logging.info('Waiting for the first training step: %s', status)
        self._last_waiting_line = now

  def _train_once(self, minimize: agent_lib.Minimize) -> None:
    self._checkpointer.maybe_save()
    with profiling.ExportingTimer('timing/training_step_secs', _TIMING_WINDOW):
      self._agent.training_step(minimize, self._iteration())
      self._count_frames()

  def _count_frames(self) -> None:
    """Advances the logger's step to the frames of the iterations done: once per iteration,
    however many optimizer steps it takes (a skipped non-finite step trains again)."""
    self._logger.step_cnt.assign(self._frames(self._iteration()))

  def _frames(self, iteration: int) -> int:
    return iteration * self._frames_per_iteration

  def run(self, stop_requested) -> None:
    if self.already_finished:
      logging.warning(
          'Training already finished at %d environment frames (iteration %d, checkpoint %s); '
          'delete the logdir or raise --total_environment_frames (now %d) to train more.',
          self._frames(self._iteration()), self._iteration(),
          self._checkpointer.latest_checkpoint, int(self._config.total_environment_frames))
      # Exported again from that checkpoint, so that a lost or damaged `saved_model/` is
      # mended by running the learner once more.
      self._checkpointer.export_policy()
      lifecycle.answer_training_finished(self._config, stop_requested)
      return
    minimize = training.create_minimize(self._strategy, self._agent, self._optimizer,
                                        self._logger)

    def timed_minimize(batch):
      with profiling.ExportingTimer('timing/minimize_secs', _TIMING_WINDOW):
        metrics = minimize(batch)
        self._count_frames()
        return metrics

    def train_once():
      # Summaries of the training thread (timings) share the logger's step: frames.
      with self._summary_writer.as_default(step=self._logger.step_cnt):
        self._train_once(timed_minimize)

    server = self._start_server()
    self._starvation = starvation.StarvationWatch(server, self._config)
    self._last_waiting_line = time.monotonic()
    lifecycle.serve_and_train(server, self._logger, self._write_logs, train_once,
                              lambda: self._iteration() >= self._final_iteration,
                              stop_requested, self._unroll_queue, self._episode_stats)
    path = self._checkpointer.save()
    self._episode_reporter.flush()
    self._summary_writer.flush()
    iteration = self._iteration()
    if iteration >= self._final_iteration:
      reason = 'the frame budget is spent'
    else:
      left = int(self._config.total_environment_frames) - self._frames(iteration)
      reason = f'stopped with {left} frames of the budget left'
    saved = (f'checkpoint {path}' if path else
             f'no checkpoint saved (see the error above), the latest is '
             f'{self._checkpointer.latest_checkpoint}')
    logging.info('Training finished at iteration %d (%d environment frames): %s; %s',
                 iteration, self._frames(iteration), reason, saved)
