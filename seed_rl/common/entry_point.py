"""What every `*_main.py` does: run the actor loop or the learner, chosen by --run_mode.

Learner and actors run the same binary with the same flags, as in the original. The learner
module is imported only in learner mode, so actor processes never import TensorFlow.
"""

import importlib
import sys
from typing import Any, Callable, Sequence

from absl import app
from absl import flags
from absl import logging

from seed_rl.common import actor

FLAGS = flags.FLAGS


def run(argv: Sequence[str], create_env_fn: Callable[[int, Any], Any], learner_module: str,
        create_agent_fn: Callable[..., Any], create_optimizer_fn: Callable[[int], Any]) -> None:
  """Runs `actor_loop(create_env_fn)` or `<learner_module>.learner_loop(...)`.

  Args:
    argv: the arguments left by absl (only the program name is allowed).
    create_env_fn: `(env_id, config) -> env`.
    learner_module: e.g. 'seed_rl.agents.vtrace.learner'.
    create_agent_fn, create_optimizer_fn: passed to `learner_loop`.
  """
  if len(argv) > 1:
    raise app.UsageError(f'Too many command-line arguments: {list(argv[1:])}')
  if FLAGS.run_mode == 'actor':
    try:
      actor.actor_loop(create_env_fn)
    except actor.FatalActorError as e:
      sys.exit(f'seed_rl actor: {e}')
  elif FLAGS.run_mode == 'learner':
    learner = importlib.import_module(learner_module)
    try:
      learner.learner_loop(create_env_fn, create_agent_fn, create_optimizer_fn)
    except ValueError as e:  # A configuration the learner refuses: one line, no traceback.
      logging.vlog(1, 'The learner stopped:', exc_info=True)
      sys.exit(f'seed_rl learner: {e} (--v=1 shows the traceback)')
  else:
    raise ValueError(f'Unsupported run mode {FLAGS.run_mode}; use --run_mode=learner or '
                     '--run_mode=actor.')
