"""Checks of the learner's configuration and its transfer to the actors."""

import tensorflow as tf

from seed_rl.common import config_checks
from seed_rl.common import config_transfer

# The checks need no TensorFlow (run_local.sh makes them too); the original's name stays here.
validate_learner_config = config_checks.validate_learner_config


def serialize_config(config) -> tf.Tensor:
  """Scalar string tensor of the experiment configuration, for a bound `get_config` function.

  FlagValues: the experiment flags whose value differs from the default; a dict or a
  dataclass: all its fields (see `config_transfer.serialize_config_json`).
  """
  return tf.constant(config_transfer.serialize_config_json(config))
