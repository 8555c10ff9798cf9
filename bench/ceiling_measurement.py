"""Times an agent's network the way its learner runs it, without environments or RPC.

`measure` builds the agent with the learner's own code (`learner_runtime`: devices, specs,
networks; the optimizer of the entry point; `training.create_minimize`) and times, one after the
other:

- inference: the agent's `policy` and `explore` on one batch of `inference_batch_size` rows, as
  the learner's inference function calls them (on its inference device), through the path the
  learner's server calls that function by (`seed_rl.grpc.binding`);
- training: the agent's own `training_step` (V-trace: one optimizer step on a batch; R2D2: replay
  insertion and prioritized sampling, the double-Q loss of the online and target networks,
  priority updates, target copies) on synthetic unrolls of the learner's unroll shapes
  (`burn_in + unroll_length + 1` steps, observations as the environment gives them).

Then it runs both at once, as the learner shares the machine between them
(`bench.overlapped_compute`): one inference thread per batch that can be in flight
(`num_envs // inference_batch_size`) beside one training thread, acting at most the unrolls the
environments fill and the unroll queue holds ahead of training.

Synthetic unrolls hold random frames and floats and zero integers (actions, done flags): the
network's cost does not depend on the values. `bench.ceiling` turns the timings into the
compute-only ceiling in frames/s: the better of the two ways.
"""

import itertools
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

from bench import ceiling
from bench import overlapped_compute
from seed_rl.common.learner_runtime import agent as agent_lib
from seed_rl.common.learner_runtime import inference
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import runtime
from seed_rl.common.learner_runtime import training
from seed_rl.grpc import binding

# Timed calls at least, however long each takes (after one untimed call that traces).
_MIN_TIMED_CALLS = 2


def synthetic_batch(specs: Any, rows: int) -> Any:
  """A nest of `[rows, ...]` tensors matching `specs`: uint8 uniform in [0, 255], floats uniform
  in [0, 1) (so that R2D2's priorities, its TD errors, are not all 0), everything else zeros."""
  generator = tf.random.Generator.from_seed(0)

  def make(spec: tf.TensorSpec) -> tf.Tensor:
    shape = [rows] + spec.shape.as_list()
    if spec.dtype == tf.uint8:
      return tf.cast(generator.uniform(shape, 0, 256, tf.int32), tf.uint8)
    if spec.dtype.is_floating:
      return generator.uniform(shape, dtype=spec.dtype)
    return tf.zeros(shape, spec.dtype)

  return tf.nest.map_structure(make, specs)


class SyntheticUnrollQueue(object):
  """Stands in for the learner's unroll queue: `dequeue_many(n)` gives the first `n` rows of one
  synthetic batch of unrolls (made once, so that making data is not timed)."""

  def __init__(self, specs: Any, max_rows: int):
    self.specs = specs
    self._unrolls = synthetic_batch(specs, max_rows)

  def dequeue_many(self, n: int) -> Any:
    return tf.nest.map_structure(lambda t: t[:n], self._unrolls)


class CallCost(NamedTuple):
  """Mean cost of one call, in seconds: wall time and this process's CPU time (all threads)."""
  wall_secs: float
  cpu_secs: float


def time_call_costs(fn: Callable[[], Any], seconds: float) -> CallCost:
  """Mean wall and CPU time of `fn()` over at least `seconds` (and `_MIN_TIMED_CALLS` calls),
  after one untimed call (tracing, filling a replay)."""
  fn()
  calls = 0
  start, cpu_start = time.perf_counter(), time.process_time()
  while calls < _MIN_TIMED_CALLS or time.perf_counter() - start < seconds:
    fn()
    calls += 1
  return CallCost((time.perf_counter() - start) / calls,
                  (time.process_time() - cpu_start) / calls)


def time_calls(fn: Callable[[], Any], seconds: float) -> float:
  """Mean seconds of `fn()`, as `time_call_costs` measures them."""
  return time_call_costs(fn, seconds).wall_secs


def build_agent(agent: agent_lib.LearnerAgent, create_env_fn: Callable[[int, Any], Any],
                config: Any) -> tuple[Any, Any, inference.Specs]:
  """`(config, settings, specs)`: `agent`'s networks created as its learner creates them, on
  the learner's devices and in its precision, after the learner's checks of `config` (returned
  with `inference_batch_size` resolved) and of the agent."""
  config = runtime.validate_config(config)
  agent.validate_config()
  settings = runtime.init_devices(config)
  specs = runtime.create_agent(agent, create_env_fn, settings.strategy, config.env_config)
  return config, settings, specs


def _inference_call(agent: agent_lib.LearnerAgent, specs: inference.Specs, rows: int,
                    device: str) -> Callable[[], Any]:
  """One inference batch of `rows` rows: the agent's policy and exploration, called the way the
  learner's server calls its inference function (`binding`: the traced function run directly
  on host arrays, without `tf.function`'s Python wrapper, whose per-call cost the pipeline does
  not pay), outputs to host."""
  inputs = (tf.range(rows), *synthetic_batch((specs.action, specs.env_output), rows),
            agent.initial_state(rows))
  signature = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), inputs)

  @tf.function(input_signature=list(signature))
  def inference(env_ids, prev_actions, env_outputs, agent_state):
    with tf.device(device):
      agent_outputs, new_agent_state = agent.policy(prev_actions, env_outputs, agent_state)
    return agent.explore(env_ids, agent_outputs).action, new_agent_state

  run = binding.bind_function(inference, binding.cpu_device_name()).runner
  arrays = [t.numpy() for t in tf.nest.flatten(inputs)]
  return lambda: run(arrays)


def _training_call(agent: agent_lib.LearnerAgent, specs: inference.Specs,
                   create_optimizer_fn: Callable[[int], Any], strategy: tf.distribute.Strategy,
                   config: Any, frames_per_iteration: int) -> Callable[[], Any]:
  """One training iteration of the agent on synthetic unrolls, with the entry point's optimizer
  (its schedule spanning the frame budget, as in the learner)."""
  unroll_specs = inference.EnvStates(1, 1, agent.unroll_length(), agent.burn_in, specs,
                                     tf.Variable(0, dtype=tf.int64)).unroll_specs
  agent.prepare_training(SyntheticUnrollQueue(
      unroll_specs, max(agent.unrolls_per_iteration(), agent.minimize_batch_size())))
  final_iteration = math.ceil(config.total_environment_frames / frames_per_iteration)
  with strategy.scope():
    optimizer, _ = create_optimizer_fn(final_iteration * agent.optimizer_steps_per_iteration())
    optimizer.build(agent.trainable_variables)
  minimize = training.create_minimize(strategy, agent, optimizer,
                                      progress_logger.ProgressLogger())
  iterations = itertools.count()

  def train():
    agent.training_step(minimize, next(iterations))
    return optimizer.iterations.numpy()  # Waits for the step's updates.

  return train


def measure(agent: agent_lib.LearnerAgent, create_env_fn: Callable[[int, Any], Any],
            create_optimizer_fn: Callable[[int], Any], config: Any, seconds: float) -> dict:
  """Times `agent`'s inference and training for `seconds` each, then both at once for
  `seconds`, as configured by `config`.

  Args:
    agent: a new `LearnerAgent` (e.g. `VTraceAgent(create_agent, VTraceConfig.from_flags())`).
    create_env_fn: `(env_id, config) -> env`; created once for its spaces.
    create_optimizer_fn: `final_iteration -> (optimizer, learning_rate_fn)`.
    config: the agent's typed config; `inference_batch_size=-1` is resolved as the learner
      does.
    seconds: time spent in timed calls of each part.

  Returns:
    dict with `inference_secs` (one batch), `inference_batch_size`, `frames_per_inference`,
    `training_step_secs`, `frames_per_training_step`, `sequential_frames_per_sec` (the two
    one after the other, see `bench.ceiling`), `overlapped_frames_per_sec`,
    `overlapped_training_busy`, `overlapped_inference_busy`,
    `overlapped_inference_call_median_secs`, `overlapped_inference_call_p99_secs`,
    `overlapped_inference_call_max_secs`, `overlapped_cores_busy`, `inference_threads` (the
    two at once, see `bench.overlapped_compute`) and `frames_per_sec`, the ceiling: the better
    of the two.
  """
  config, settings, specs = build_agent(agent, create_env_fn, config)
  rows = config.inference_batch_size
  frames_per_inference = rows * config.num_action_repeats
  frames_per_unroll = agent.unroll_length() * config.num_action_repeats
  frames_per_training_step = agent.unrolls_per_iteration() * frames_per_unroll
  infer = _inference_call(agent, specs, rows, settings.inference_devices[0])
  train = _training_call(agent, specs, create_optimizer_fn, settings.strategy, config,
                         frames_per_training_step)
  inference_secs = time_calls(infer, seconds)
  training_step_secs = time_calls(train, seconds)
  sequential = ceiling.ceiling_frames_per_sec(
      inference_secs, frames_per_inference, training_step_secs, frames_per_training_step)
  inference_threads = max(1, config.num_envs // rows)
  overlapped = overlapped_compute.measure(
      infer, train, frames_per_inference=frames_per_inference,
      frames_per_training_step=frames_per_training_step, inference_threads=inference_threads,
      frames_ahead=max(frames_per_inference, (config.num_envs + agent.unroll_queue_capacity()) *
                       frames_per_unroll),
      seconds=seconds)
  return {
      'inference_secs': inference_secs, 'inference_batch_size': rows,
      'frames_per_inference': frames_per_inference, 'training_step_secs': training_step_secs,
      'frames_per_training_step': frames_per_training_step,
      'sequential_frames_per_sec': sequential,
      'overlapped_frames_per_sec': overlapped.frames_per_sec,
      'overlapped_training_busy': overlapped.training_busy,
      'overlapped_inference_busy': overlapped.inference_busy,
      'overlapped_inference_call_median_secs': overlapped.inference_call_median_secs,
      'overlapped_inference_call_p99_secs': overlapped.inference_call_p99_secs,
      'overlapped_inference_call_max_secs': overlapped.inference_call_max_secs,
      'overlapped_cores_busy': overlapped.cores_busy,
      'inference_threads': inference_threads,
      'frames_per_sec': max(sequential, overlapped.frames_per_sec)}
