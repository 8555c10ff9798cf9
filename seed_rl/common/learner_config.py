"""Checks of the learner's configuration and its transfer to the actors."""

import tensorflow as tf

from seed_rl.common import config_transfer


def validate_learner_config(config, num_hosts: int = 1) -> None:
  """Checks the learner's batch sizes; resolves `inference_batch_size=-1` in place.

  The server only runs full inference batches, so a batch must be a whole number of actor
  calls and there must be enough environments to fill one per host.
  """
  if config.num_envs <= 0:
    raise ValueError(f'num_envs must be positive, got {config.num_envs}.')
  if config.env_batch_size <= 0:
    raise ValueError(f'env_batch_size must be positive, got {config.env_batch_size}.')
  if config.inference_batch_size == -1:
    config.inference_batch_size = max(config.env_batch_size,
                                      config.num_envs // (2 * num_hosts))
  if config.inference_batch_size <= 0:
    raise ValueError(
        f'inference_batch_size must be positive or -1, got {config.inference_batch_size}.')
  if config.inference_batch_size % config.env_batch_size != 0:
    raise ValueError(
        'Learner-side batch size (=%d) must be exact multiple of the actor-side batch size '
        '(=%d).' % (config.inference_batch_size, config.env_batch_size))
  if config.num_envs < config.inference_batch_size * num_hosts:
    raise ValueError(
        'Inference batch size is bigger than the number of environments: '
        f'inference_batch_size={config.inference_batch_size} x {num_hosts} host(s) > '
        f'num_envs={config.num_envs}; the server runs full batches only, so it would wait '
        'forever.')


def serialize_config(config) -> tf.Tensor:
  """Scalar string tensor of the experiment configuration, for a bound `get_config` function.

  FlagValues: the experiment flags whose value differs from the default; a dict or a
  dataclass: all its fields (see `config_transfer.serialize_config_json`).
  """
  return tf.constant(config_transfer.serialize_config_json(config))
