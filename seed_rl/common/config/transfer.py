"""Sends the learner's experiment configuration to the actors (TensorFlow-free at import).

The learner binds a `get_config` function returning `serialize_config(FLAGS)`; each actor calls
`update_config(FLAGS, client)` after connecting, so only the learner needs the full command line.
The original pickled the config and then, by a bug, never applied it on the actors. Here it is
JSON (a server cannot make an actor run code) and it is applied.
"""

import dataclasses
import json

from absl import flags
from absl import logging
import numpy as np

# Flags that describe one process or its host rather than the experiment: never sent to actors.
# The gRPC security flags are paths on each host's own disk.
PER_PROCESS_FLAGS = frozenset(['run_mode', 'task', 'server_address', 'logdir', 'job-dir',
                               'render', 'grpc_token_file', 'grpc_tls_cert_file',
                               'grpc_tls_key_file', 'grpc_tls_ca_file'])


def _experiment_flags(flag_values: flags.FlagValues) -> set:
  """Names of flags that configure the experiment (not absl's own logging/test flags)."""
  names = set()
  for module, module_flags in flag_values.flags_by_module_dict().items():
    if module.startswith('absl.'):
      continue
    names.update(flag.name for flag in module_flags)
  return names - PER_PROCESS_FLAGS


def _jsonable(value):
  """JSON-friendly flag value (enum-class flags hold enums)."""
  if hasattr(value, 'name') and hasattr(value, 'value') and not isinstance(value, str):
    return value.name
  return value


def serialize_config_json(config) -> str:
  """The experiment configuration as JSON.

  FlagValues: the experiment flags whose value was given or differs from the default.
  A dict or a dataclass: all its fields.
  """
  if isinstance(config, flags.FlagValues):
    payload = {name: _jsonable(config[name].value) for name in sorted(_experiment_flags(config))
               if config[name].present or config[name].value != config[name].default}
  elif dataclasses.is_dataclass(config):
    payload = dataclasses.asdict(config)
  elif isinstance(config, dict):
    payload = dict(config)
  else:
    raise TypeError(f'Cannot serialize a config of type {type(config).__name__}; use '
                    'FlagValues, a dict or a dataclass.')
  try:
    return json.dumps(payload)
  except TypeError as e:
    raise TypeError(f'Config values must be JSON-serializable: {e}') from e


def serialize_config(config) -> 'tf.Tensor':
  """Scalar string tensor of the experiment configuration, for a bound `get_config` function.

  FlagValues: the experiment flags whose value differs from the default; a dict or a
  dataclass: all its fields (see `serialize_config_json`). TensorFlow is imported here, when the
  learner calls it, so that actors import this module without it.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  return tf.constant(serialize_config_json(config))


def update_config(current_config, client) -> None:
  """Overwrites `current_config` with the learner's configuration, if it serves `get_config`.

  Per-process flags (`PER_PROCESS_FLAGS`: task, server_address, logdir, run_mode, render and the
  gRPC token and TLS file paths) are never changed; an actor flag given on its own command line
  with another value is overridden with a warning.
  """
  try:
    get_config = client.get_config
  except AttributeError:
    return
  serialized = np.asarray(get_config()).item()
  if isinstance(serialized, bytes):
    serialized = serialized.decode('utf-8')
  update = json.loads(serialized)
  if isinstance(current_config, flags.FlagValues):
    for name, value in update.items():
      if name not in current_config or name in PER_PROCESS_FLAGS:
        continue
      flag = current_config[name]
      if flag.present and flag.value != value:
        logging.warning("Flag --%s=%r overridden by the learner's value %r.", name,
                        flag.value, value)
      setattr(current_config, name, value)
  elif isinstance(current_config, dict):
    current_config.update(update)
  else:
    for name, value in update.items():
      setattr(current_config, name, value)
