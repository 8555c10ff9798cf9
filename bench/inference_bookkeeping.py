r"""What the learner's inference function costs beyond the agent's network, per batch.

  python -m bench.inference_bookkeeping seed_rl.environments.atari.vtrace_main \
      --network=minimal --num_envs=16 --env_batch_size=8 --measure_secs=3 --rounds=3 \
      [the entry point's flags]

For every batch of actor steps the learner's inference function (`learner_runtime.inference`)
detects actor restarts, counts episode statistics, reads and writes each environment's state,
checks the outputs for non-finite values and appends the steps to the unrolls it queues for
training; the agent's policy and exploration are one part of it. This bench calls both the
whole function and the policy and exploration alone the way the learner's server calls them
(`seed_rl.grpc.binding`, on host arrays), on batches of `inference_batch_size` synthetic steps
(the env ids of one actor's call after another's, no episode ends), in alternating rounds of
`--measure_secs` each. Completed unrolls are taken off the queue as training takes them.

It prints, per call, the median over rounds of the wall time and of this process's CPU time
(all threads) of each, and the difference: the bookkeeping's cost per batch, which a pipeline
pays on top of its network's compute (`bench.end_to_end`'s "pipeline's learner" against
"network compute alone").
"""

import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

from absl import app
from absl import flags

from bench import ceiling_mode

USAGE = ('usage: python -m bench.inference_bookkeeping ENTRY_POINT_MODULE '
         '[--measure_secs=S] [--rounds=N] [its flags]')
# Completed unrolls left in the queue before the bench takes them off, as training would.
_UNROLLS_KEPT = 64


class _LearnerInference(object):
  """The learner's inference function, bound as its server binds it, with the state it keeps
  (which it references only weakly)."""

  def __init__(self, agent: Any, specs: Any, config: Any, device: str):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bench import ceiling_measurement  # pylint: disable=g-import-not-at-top
    from seed_rl.common.learner_runtime import episodes  # pylint: disable=g-import-not-at-top
    from seed_rl.common.learner_runtime import inference  # pylint: disable=g-import-not-at-top
    from seed_rl.common.learner_runtime import unroll_queue  # pylint: disable=g-import-not-at-top
    from seed_rl.grpc import binding  # pylint: disable=g-import-not-at-top

    iterations = tf.Variable(0, dtype=tf.int64)
    self._env_states = inference.EnvStates(
        config.num_envs, config.num_envs - config.num_eval_envs, agent.unroll_length(),
        agent.burn_in, specs, iterations)
    self._stats = episodes.EpisodeStats(config.num_envs)
    self._queue = unroll_queue.UnrollQueue(-1, self._env_states.unroll_specs, iterations)
    rows = config.inference_batch_size
    function = inference.create_inference_fn(agent, self._env_states, self._stats, self._queue,
                                             specs, rows, config.num_action_repeats, device)
    self._run = binding.bind_function(function, binding.cpu_device_name()).runner
    env_outputs = ceiling_measurement.synthetic_batch(specs.env_output, rows)
    env_outputs = env_outputs._replace(done=tf.zeros_like(env_outputs.done),
                                       abandoned=tf.zeros_like(env_outputs.abandoned))
    self._batches = []  # One per actor's call: its env ids, one run id each.
    for first_env in range(0, config.num_envs - rows + 1, rows):
      inputs = (tf.range(first_env, first_env + rows), tf.ones([rows], tf.int64), env_outputs,
                tf.zeros([rows]))
      self._batches.append([t.numpy() for t in tf.nest.flatten(inputs)])
    self._calls = 0

  def __call__(self) -> None:
    """Runs the function on the next batch (the actors' calls in turn); now and then empties
    the unroll queue, as training does."""
    self._run(self._batches[self._calls % len(self._batches)])
    self._calls += 1
    if self._calls % _UNROLLS_KEPT == 0 and int(self._queue.size()) > _UNROLLS_KEPT:
      self._queue.dequeue_many(self._queue.size())


def measure(agent: Any, create_env_fn: Callable[[int, Any], Any], config: Any, seconds: float,
            rounds: int) -> dict:
  """Times `agent`'s whole inference function and its policy and exploration alone, `rounds`
  times each for `seconds`, alternating.

  Returns:
    dict with `inference_batch_size` and the medians over rounds, in seconds per call, of
    `function_wall_secs`, `function_cpu_secs`, `policy_wall_secs`, `policy_cpu_secs`.
  """
  from bench import ceiling_measurement  # pylint: disable=g-import-not-at-top

  config, settings, specs = ceiling_measurement.build_agent(agent, create_env_fn, config)
  device = settings.inference_devices[0]
  function = _LearnerInference(agent, specs, config, device)
  policy = ceiling_measurement._inference_call(  # pylint: disable=protected-access
      agent, specs, config.inference_batch_size, device)
  function_costs, policy_costs = [], []
  for _ in range(rounds):
    function_costs.append(ceiling_measurement.time_call_costs(function, seconds))
    policy_costs.append(ceiling_measurement.time_call_costs(policy, seconds))
  median = lambda costs, field: statistics.median(getattr(cost, field) for cost in costs)
  return {'inference_batch_size': config.inference_batch_size,
          'function_wall_secs': median(function_costs, 'wall_secs'),
          'function_cpu_secs': median(function_costs, 'cpu_secs'),
          'policy_wall_secs': median(policy_costs, 'wall_secs'),
          'policy_cpu_secs': median(policy_costs, 'cpu_secs')}


def format_lines(result: dict) -> str:
  """The printed report of `measure`'s result."""
  ms = lambda key: result[key] * 1e3
  return '\n'.join([
      f'per inference call of {result["inference_batch_size"]} rows (medians over rounds):',
      f'  learner inference function: wall {ms("function_wall_secs"):.3f} ms, '
      f'CPU {ms("function_cpu_secs"):.3f} ms',
      f'  policy and exploration alone: wall {ms("policy_wall_secs"):.3f} ms, '
      f'CPU {ms("policy_cpu_secs"):.3f} ms',
      f'  bookkeeping: CPU {ms("function_cpu_secs") - ms("policy_cpu_secs"):.3f} ms per call, '
      f'ratio function / policy CPU: '
      f'{result["function_cpu_secs"] / result["policy_cpu_secs"]:.2f}'])


def main(argv: Sequence[str]) -> None:
  """`argv`: the program, the entry point module, then its flags and this bench's."""
  entry_point = ceiling_mode.import_entry_point(argv, USAGE)
  seconds = flags.DEFINE_float('measure_secs', 3., 'Seconds of each timed round.')
  rounds = flags.DEFINE_integer('rounds', 3, 'Rounds of each, alternating.')

  def run(rest: Sequence[str]) -> None:
    if len(rest) > 1:
      raise app.UsageError(f'Too many command-line arguments: {list(rest[1:])}')
    if seconds.value <= 0 or rounds.value < 1:
      raise app.UsageError('--measure_secs must be positive and --rounds at least 1.')
    from seed_rl.environments.atari import env  # pylint: disable=g-import-not-at-top
    agent, config = ceiling_mode.create_agent(entry_point)
    print(format_lines(measure(agent, env.create_environment, config, seconds.value,
                               rounds.value)), flush=True)

  app.run(run, argv=[argv[0]] + list(argv[2:]))


if __name__ == '__main__':
  main(sys.argv)
