"""The learner's door: checks of each actor request before it joins an inference batch.

A request is refused (INVALID_ARGUMENT for that caller alone, the batch runs for the others)
when its env ids are outside `[0, num_envs)` or repeated, when its rewards or float observations
are not finite (NaN would poison the model), when it marks an episode abandoned that is not
done, or when it comes from an actor that another actor with the same env ids has replaced
(two actors with the same --task alternating would otherwise reset those environments forever).
Abandoned episodes (cut short by a time limit) reported to an agent that cannot bootstrap them
are not refused: that agent treats them as terminal, and the learner warns once.
"""

import threading
from typing import Any, List

from absl import logging
import numpy as np


class InferenceInputCheck(object):
  """`check(arrays)`: the `validate` callable of the served inference function.

  `arrays` are one request's arguments flattened in the inference signature's order:
  env ids, run ids, the `EnvOutput` leaves, raw rewards.
  """

  def __init__(self, num_envs: int, env_output_specs: Any, agent_name: str,
               allow_abandoned: bool = False):
    self._num_envs = num_envs
    self._agent_name = agent_name
    self._allow_abandoned = allow_abandoned
    names = [f'env_outputs.{path}' for path in _leaf_paths(env_output_specs)]
    self._names = ['env_ids', 'run_ids'] + names + ['raw_rewards']
    self._float_args = [i for i, name in enumerate(self._names)
                        if name.startswith(('env_outputs.reward', 'env_outputs.observation',
                                            'raw_rewards'))]
    self._abandoned_arg = self._names.index('env_outputs.abandoned')
    self._done_arg = self._names.index('env_outputs.done')
    self._lock = threading.Lock()
    self._run_ids = np.zeros(num_envs, np.int64)
    self._replaced_run_ids = np.zeros(num_envs, np.int64)
    self._warned_envs = set()
    self._warned_abandoned = False

  def __call__(self, arrays: List[np.ndarray]) -> None:
    arrays = [np.asarray(a) for a in arrays]
    if arrays[0].ndim == 0:  # A single row sent without its batch dimension.
      arrays = [a[np.newaxis] for a in arrays]
    env_ids, run_ids = arrays[0].astype(np.int64), arrays[1]
    self._check_env_ids(env_ids)
    for i in self._float_args:
      if arrays[i].dtype.kind == 'f':
        finite = np.isfinite(arrays[i]).reshape(len(env_ids), -1).all(axis=1)
        if not finite.all():
          raise ValueError(f'{self._names[i]} is not finite (NaN or Inf) for env ids '
                           f'{env_ids[~finite].tolist()}: refused so that it cannot reach the '
                           'model.')
    abandoned = arrays[self._abandoned_arg].astype(bool)
    not_done = abandoned & ~arrays[self._done_arg].astype(bool)
    if not_done.any():
      raise ValueError(f'env_outputs.abandoned is set without env_outputs.done for env ids '
                       f'{env_ids[not_done].tolist()}: only an episode that ended can be '
                       'abandoned.')
    if abandoned.any() and not (self._allow_abandoned or self._warned_abandoned):
      self._warned_abandoned = True
      logging.warning('%s does not support abandoned episodes (env ids %s were cut short, '
                      'e.g. by a time limit): it treats them as terminal.', self._agent_name,
                      env_ids[abandoned].tolist())
    self._check_run_ids(env_ids, run_ids)

  def _check_env_ids(self, env_ids: np.ndarray) -> None:
    outside = (env_ids < 0) | (env_ids >= self._num_envs)
    if outside.any():
      raise ValueError(
          f'env ids {env_ids[outside].tolist()} are outside the learner\'s [0, {self._num_envs}) '
          f'(--num_envs={self._num_envs}): an actor owns env ids [task * env_batch_size, '
          '(task + 1) * env_batch_size); check this actor\'s --task and --env_batch_size '
          'against the learner\'s --num_envs.')
    if len(np.unique(env_ids)) != len(env_ids):
      raise ValueError(f'env ids {env_ids.tolist()} repeat within one call.')

  def _check_run_ids(self, env_ids: np.ndarray, run_ids: np.ndarray) -> None:
    """Refuses run ids that a newer actor of the same env ids replaced; records new ones."""
    with self._lock:
      replaced = run_ids == self._replaced_run_ids[env_ids]
      if replaced.any():
        self._refuse_replaced(env_ids[replaced], run_ids[replaced])
      new = run_ids != self._run_ids[env_ids]
      self._replaced_run_ids[env_ids[new]] = self._run_ids[env_ids[new]]
      self._run_ids[env_ids[new]] = run_ids[new]

  def _refuse_replaced(self, env_ids: np.ndarray, run_ids: np.ndarray) -> None:
    current = self._run_ids[env_ids]
    message = (f'env ids {env_ids.tolist()} belong to another actor now (run ids '
               f'{current.tolist()} replaced run ids {run_ids.tolist()}): are two actors running '
               'with the same --task?')
    if not self._warned_envs.issuperset(env_ids.tolist()):
      self._warned_envs.update(env_ids.tolist())
      logging.warning('Refusing an actor: %s', message)
    raise ValueError(message)


def _leaf_paths(nest: Any, prefix: str = '') -> List[str]:
  """Dotted names of the leaves of a nest, in `tf.nest.flatten` order (dict keys sorted)."""
  if isinstance(nest, dict):
    items = sorted(nest.items())
  elif hasattr(nest, '_fields'):
    items = zip(nest._fields, nest)
  elif isinstance(nest, (list, tuple)):
    items = enumerate(nest)
  else:
    return [prefix]
  return [path for key, value in items
          for path in _leaf_paths(value, f'{prefix}.{key}' if prefix else str(key))]
