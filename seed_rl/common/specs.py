"""TensorSpecs of what flows between actors and the learner, from the environment's spaces."""

import collections.abc
from typing import Any, Optional

import tensorflow as tf

from seed_rl.common.structures import EnvOutput


def tensor_spec_from_gym_space(space, name: Optional[str] = None) -> Any:
  """TensorSpec of the values of a gym(nasium) space.

  Spaces with a shape and dtype (Box, Discrete, MultiDiscrete, MultiBinary) map directly; a
  Tuple of 1-D spaces maps to one float32 vector of their summed size; a Dict space (a GoalEnv's
  observations) to a dict of the specs of its subspaces.
  """
  subspaces = getattr(space, 'spaces', None)
  if isinstance(subspaces, collections.abc.Mapping):
    return {key: tensor_spec_from_gym_space(subspace, key)
            for key, subspace in subspaces.items()}
  if isinstance(subspaces, tuple):
    if not all(len(s.shape) == 1 for s in subspaces):
      raise ValueError(f'Only Tuple spaces of 1-D spaces are supported, got {space}.')
    size = sum(s.shape[0] for s in subspaces)
    return tf.TensorSpec([size], tf.float32, name)
  if getattr(space, 'shape', None) is None or getattr(space, 'dtype', None) is None:
    raise ValueError(f'Unsupported space {space!r}: it has no shape and dtype.')
  return tf.TensorSpec(space.shape, tf.as_dtype(space.dtype), name)


def env_output_specs_for(observation_space) -> EnvOutput:
  """TensorSpecs of one EnvOutput row for an environment's observation space."""
  return EnvOutput(
      reward=tf.TensorSpec([], tf.float32, 'reward'),
      done=tf.TensorSpec([], tf.bool, 'done'),
      observation=tensor_spec_from_gym_space(observation_space, 'observation'),
      abandoned=tf.TensorSpec([], tf.bool, 'abandoned'),
      episode_step=tf.TensorSpec([], tf.int32, 'episode_step'))


def leading_dim_specs(specs, dim: Optional[int]):
  """`specs` with a leading dimension `dim` added to every spec."""
  return tf.nest.map_structure(
      lambda s: tf.TensorSpec([dim] + list(s.shape), s.dtype, s.name), specs)


def specs_without_batch(nest):
  """Specs of one row of a batched nest of tensors."""
  return tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape[1:], t.dtype), nest)


def inference_input_specs(batch_size: int, env_output_specs):
  """input_signature of the inference function: (env_ids, run_ids, env_outputs, raw_rewards)."""
  return (tf.TensorSpec([batch_size], tf.int32, 'env_id'),
          tf.TensorSpec([batch_size], tf.int64, 'run_id'),
          leading_dim_specs(env_output_specs, batch_size),
          tf.TensorSpec([batch_size], tf.float32, 'raw_reward'))


def zeros_for(specs, batch_size: int):
  """A batch of zeros matching `specs` (e.g. to create a network's variables)."""
  return tf.nest.map_structure(
      lambda s: tf.zeros([batch_size] + s.shape.as_list(), s.dtype), specs)
