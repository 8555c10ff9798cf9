"""What a bench entry point's `main` does: run the usual learner or actor, or, with
`--measure_ceiling_secs`, no pipeline but the compute-only ceiling's measurement.

Its own module so that `bench.ceiling` (arithmetic, imported by actors too) stays free of
TensorFlow and `bench.ceiling_measurement` (the timing) stays free of entry points; TensorFlow is
imported only in measuring mode.
"""

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from absl import app

from bench import ceiling
from seed_rl.common import entry_point


def run_or_measure(argv: Sequence[str], measure_secs: float,
                   create_env_fn: Callable[[int, Any], Any], learner_module: str,
                   agent_class: str, create_agent_fn: Callable[..., Any],
                   create_optimizer_fn: Callable[[int], Any],
                   create_config_fn: Callable[[], Any]) -> None:
  """Without `measure_secs` (0) the usual learner or actor (`entry_point.run`); with it, no
  pipeline: time the agent's network for `measure_secs` per part (inference, training, both at
  once) and print the `ceiling.format_line` line.

  Args:
    argv: the arguments left by absl (only the program name is allowed).
    measure_secs: seconds of each timed part; 0: run.
    create_env_fn, learner_module, create_agent_fn, create_optimizer_fn: as `entry_point.run`.
    agent_class: the name of the `LearnerAgent` class of `learner_module` (e.g. 'VTraceAgent'),
      created on `create_agent_fn` and the config in measuring mode only.
    create_config_fn: `() -> config`, the agent's typed config read from the flags (e.g.
      `VTraceConfig.from_flags`), as `entry_point.run` takes it.

  Raises:
    app.UsageError: in measuring mode, arguments beyond the program name.
  """
  if measure_secs <= 0:
    entry_point.run(argv, create_env_fn, learner_module, create_agent_fn, create_optimizer_fn,
                    create_config_fn=create_config_fn)
    return
  if len(argv) > 1:
    raise app.UsageError(f'Too many command-line arguments: {list(argv[1:])}')
  from bench import ceiling_measurement  # pylint: disable=g-import-not-at-top
  config = create_config_fn()
  agent = getattr(importlib.import_module(learner_module), agent_class)(create_agent_fn, config)
  result = ceiling_measurement.measure(agent, create_env_fn, create_optimizer_fn, config,
                                       measure_secs)
  print(ceiling.format_line(result), flush=True)
