r"""The compute-only ceiling of a package entry point's agent: no pipeline, only its network.

  python -m bench.ceiling_mode seed_rl.environments.atari.vtrace_main --network=nature \
      --measure_ceiling_secs=5 --num_envs=2 [the entry point's flags]

Imports the entry point module named first (which defines its flags), parses the flags after it,
then times the network of the module's `create_agent` with its `create_optimizer` and typed
config (`create_config`) for `--measure_ceiling_secs` per part (inference, training, both at
once: `bench.ceiling_measurement`) and prints the `bench.ceiling.format_line` line. The module
runs its learner module's agent (`LEARNER_MODULE`; V-trace and R2D2 are measured) on the Atari
environment's specs, created as its learner creates them.

Its own module so that `bench.ceiling` (arithmetic, imported by actors too) stays free of
TensorFlow and `bench.ceiling_measurement` (the timing) stays free of entry points.
"""

import importlib
import sys
import types
from collections.abc import Sequence
from typing import Any, Tuple

from absl import app
from absl import flags

from bench import ceiling

# The `LearnerAgent` class of each learner module the ceiling can measure.
AGENT_CLASSES = {'seed_rl.agents.vtrace.learner': 'VTraceAgent',
                 'seed_rl.agents.r2d2.learner': 'R2D2Agent'}
USAGE = ('usage: python -m bench.ceiling_mode ENTRY_POINT_MODULE --measure_ceiling_secs=SECONDS '
         '[its flags]')


def create_agent(entry_point: types.ModuleType) -> Tuple[Any, Any]:
  """`(agent, config)`: a new `LearnerAgent` of `entry_point`'s learner, with the module's
  network and typed config (read from the parsed flags).

  Raises:
    app.UsageError: the module's learner is not one these benchmarks measure.
  """
  learner_module = entry_point.LEARNER_MODULE
  if learner_module not in AGENT_CLASSES:
    raise app.UsageError(f'{entry_point.__name__} runs {learner_module}; these benchmarks '
                         f'measure {", ".join(sorted(AGENT_CLASSES))}.')
  config = entry_point.create_config()
  agent_class = getattr(importlib.import_module(learner_module), AGENT_CLASSES[learner_module])
  return agent_class(entry_point.create_agent, config), config


def measure(entry_point: types.ModuleType, seconds: float) -> dict:
  """Times `entry_point`'s agent, network, optimizer and config (read from the parsed flags) for
  `seconds` per part; returns `bench.ceiling_measurement.measure`'s result."""
  from bench import ceiling_measurement  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.atari import env  # pylint: disable=g-import-not-at-top
  agent, config = create_agent(entry_point)
  return ceiling_measurement.measure(agent, env.create_environment,
                                     entry_point.create_optimizer, config, seconds)


def import_entry_point(argv: Sequence[str], usage: str) -> types.ModuleType:
  """The entry point module `argv[1]` names (which defines its flags); exits with `usage` when
  `argv` names none."""
  if len(argv) < 2 or argv[1].startswith('-'):
    sys.exit(usage)
  return importlib.import_module(argv[1])


def main(argv: Sequence[str]) -> None:
  """`argv`: the program, the entry point module, then its flags and `--measure_ceiling_secs`."""
  entry_point = import_entry_point(argv, USAGE)
  seconds = flags.DEFINE_float('measure_ceiling_secs', 5.,
                               'Seconds of each timed part: inference, training, both at once.')

  def run(rest: Sequence[str]) -> None:
    if len(rest) > 1:
      raise app.UsageError(f'Too many command-line arguments: {list(rest[1:])}')
    if seconds.value <= 0:
      raise app.UsageError('--measure_ceiling_secs must be positive.')
    print(ceiling.format_line(measure(entry_point, seconds.value)), flush=True)

  app.run(run, argv=[argv[0]] + list(argv[2:]))


if __name__ == '__main__':
  main(sys.argv)
