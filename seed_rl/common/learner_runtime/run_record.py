"""What a learner records in its logdir about how it was started, for evaluation and reruns.

- `learner_flags.txt`: the flags it ran with (those of seed_rl and the entry point, not absl's
  own), usable as `--flagfile` with the same entry point;
- `runs.jsonl`: one line per learner start: the entry point module (`python -m MODULE`; None
  for a script run by path) and its file, the environment factory as `module:name`, the agent
  and the time; `seed_rl.evaluate` recreates the environment from it. A factory defined in the
  entry point itself (its `__module__` is `__main__`) is recorded under the entry point's module
  name, which imports elsewhere, or as `__main__:name` for a script, meaning "in the entry
  point's file".

Writing them first also checks that the logdir is writable before the learner serves anyone.
"""

import datetime
import json
import os
import sys
from typing import Any, Callable, Dict, Optional

from absl import flags
import tensorflow as tf

# The file names are the readers' (`seed_rl.common.config.run_identity`, without TensorFlow), so
# that writer and readers agree.
from seed_rl.common.config import learner_config
from seed_rl.common.config.run_identity import FLAGS_FILE, RUNS_FILE


def _qualified_name(fn: Callable, entry_point: Optional[str]) -> str:
  """`module:name` of `fn`, with the entry point's module name for `__main__`."""
  module = getattr(fn, '__module__', '?')
  if module == '__main__' and entry_point:
    module = entry_point
  return f'{module}:{getattr(fn, "__qualname__", repr(fn))}'


def _entry_point() -> Optional[str]:
  """The module run as `python -m MODULE` (None when started otherwise)."""
  spec = getattr(sys.modules.get('__main__'), '__spec__', None)
  return spec.name if spec is not None else None


def _entry_point_file() -> Optional[str]:
  """The absolute path of the entry point's file (None without one, e.g. `python -c`)."""
  path = getattr(sys.modules.get('__main__'), '__file__', None)
  return os.path.abspath(path) if path else None


def flags_file_content(flag_values: flags.FlagValues,
                       config_values: Optional[Dict[str, Any]] = None) -> str:
  """`--name=value` lines of every flag not defined by absl itself.

  A flag left unset (None) that `config_values` holds as a number is written with that value:
  the shared flags whose None means "the agent's default" are recorded as the agent's value.
  """
  config_values = config_values or {}
  lines = []
  for module, module_flags in sorted(flag_values.flags_by_module_dict().items()):
    if module.startswith('absl.'):
      continue
    for flag in sorted(module_flags, key=lambda f: f.name):
      if flag.value is not None:
        lines.append(flag.serialize())
      elif isinstance(config_values.get(flag.name), (int, float)):
        lines.append(f'--{flag.name}={config_values[flag.name]}')
  return '\n'.join(dict.fromkeys(lines)) + '\n'


def write(logdir: str, config: Any, create_env_fn: Callable, agent_name: str) -> Dict[str, Any]:
  """Writes the run record into `logdir` (created if needed); returns the `runs.jsonl` entry.

  `config`: absl flags, or a `LearnerConfig` (its `flag_values`, with the values it holds of
  the flags left unset); the flags file is written for either, when there are flags.

  Raises:
    ValueError: the logdir cannot be created or written, naming it.
  """
  entry_point = _entry_point()
  record = {'entry_point': entry_point, 'entry_point_file': _entry_point_file(),
            'create_env_fn': _qualified_name(create_env_fn, entry_point), 'agent': agent_name,
            'started': datetime.datetime.now().isoformat(timespec='seconds'), 'argv': sys.argv}
  try:
    tf.io.gfile.makedirs(logdir)
    if isinstance(config, learner_config.LearnerConfig) and config.flag_values is not None:
      content = flags_file_content(config.flag_values, dict(vars(config)))
    elif isinstance(config, flags.FlagValues):
      content = flags_file_content(config)
    else:
      content = None
    if content is not None:
      with tf.io.gfile.GFile(os.path.join(logdir, FLAGS_FILE), 'w') as f:
        f.write(content)
    with tf.io.gfile.GFile(os.path.join(logdir, RUNS_FILE), 'a') as f:
      f.write(json.dumps(record) + '\n')
  except (OSError, tf.errors.OpError) as e:
    raise ValueError(f'Cannot write the logdir {logdir}: {e}') from e
  return record
