"""The learner's door: checks of each actor request before it joins an inference batch.

A request is refused (INVALID_ARGUMENT for that caller alone, the batch runs for the others)
when its env ids are outside `[0, num_envs)` or repeated; when its rewards or float
observations are not finite (NaN would poison the model) or beyond the learner's bounds
(--refuse_rewards_above, --refuse_observations_above: finite values such as 1e30 overflow the
squares of normalizers and losses); when it marks an episode abandoned that is not done; or when it claims
env ids that a live actor on another connection owns.

Ownership: each env id belongs to the actor that sent its current run ids, known by its client
stream (`seed_rl.grpc.caller`) and the time of its last request. New run ids for an owned env id
are a restart, accepted at once when they come on the owner's own stream or when the owner's
stream has closed (an actor killed and restarted, a reconnection), and otherwise only once the
owner has sent nothing for the takeover grace period (a dead peer whose connection still looks
open). So a second actor with the same --task is refused while the first lives, and takes over
when the first is gone; and a single request from anyone who can connect cannot evict a running
actor. The door sees requests only: an owner whose call waits in a stalled batch for longer than
the grace period looks silent too, so the period must outlast the learner's longest stall
(start-up compilation, checkpoint saves). Abandoned episodes (cut short by a time limit)
reported to an agent that cannot bootstrap them are not refused: that agent treats them as
terminal, and the learner warns once.
"""

import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import numpy as np

from seed_rl.grpc import call_refusals
from seed_rl.grpc import caller

# Seconds between two warnings about refused takeovers of the same env ids.
_WARNING_PERIOD_SECS = 60.
# Env id sets whose last warning time is kept; beyond this many the oldest are forgotten.
_MAX_WARNED_SETS = 1024


class InferenceInputCheck(object):
  """`check(arrays)`: the `validate` callable of the served inference function.

  `arrays` are one request's arguments flattened in the inference signature's order:
  env ids, run ids, the `EnvOutput` leaves, raw rewards. Thread-safe: the server calls it on
  each client stream's handler thread, and `seed_rl.grpc.caller.current()` there tells the
  callers apart. Called directly (no stream), all callers count as one.

  Args:
    num_envs: the learner's --num_envs.
    env_output_specs: the `EnvOutput` nest of specs (names the refused arguments).
    agent_name: named in the warning about abandoned episodes.
    allow_abandoned: whether the agent bootstraps abandoned episodes.
    takeover_grace_secs: --actor_takeover_grace_secs: how long an owner on an open connection
      must have sent nothing before new run ids from another connection take its env ids.
    refuse_observations_above: --refuse_observations_above: bound of float observations; 0: none.
    refuse_rewards_above: --refuse_rewards_above: bound of rewards; 0: none.
  """

  def __init__(self, num_envs: int, env_output_specs: Any, agent_name: str,
               allow_abandoned: bool = False, *, takeover_grace_secs: float,
               refuse_observations_above: float, refuse_rewards_above: float):
    for flag, value in (('actor_takeover_grace_secs', takeover_grace_secs),
                        ('refuse_observations_above', refuse_observations_above),
                        ('refuse_rewards_above', refuse_rewards_above)):
      if not value >= 0:
        raise ValueError(f'--{flag} must be 0 or more, got {value}.')
    self._num_envs = num_envs
    self._agent_name = agent_name
    self._allow_abandoned = allow_abandoned
    self._grace = takeover_grace_secs
    names = [f'env_outputs.{path}' for path in _leaf_paths(env_output_specs)]
    self._names = ['env_ids', 'run_ids'] + names + ['raw_rewards']
    # (argument index, bound, flag) of every argument whose floats are checked.
    self._bounded_args = []
    for i, name in enumerate(self._names):
      if name.startswith('env_outputs.observation'):
        self._bounded_args.append((i, refuse_observations_above, 'refuse_observations_above'))
      elif name in ('env_outputs.reward', 'raw_rewards'):
        self._bounded_args.append((i, refuse_rewards_above, 'refuse_rewards_above'))
    self._abandoned_arg = self._names.index('env_outputs.abandoned')
    self._done_arg = self._names.index('env_outputs.done')
    self._lock = threading.Lock()
    # The owner of each env id: its run id, its stream and the time of its last request.
    self._owned = np.zeros(num_envs, bool)
    self._run_ids = np.zeros(num_envs, np.int64)
    self._streams = np.full(num_envs, None, object)
    self._last_request = np.zeros(num_envs, np.float64)
    self._warned: Dict[Tuple[int, ...], List[float]] = {}  # env ids -> [time, refusals since]
    self._warned_abandoned = False

  def __call__(self, arrays: List[np.ndarray]) -> None:
    arrays = [np.asarray(a) for a in arrays]
    if arrays[0].ndim == 0:  # A single row sent without its batch dimension.
      arrays = [a[np.newaxis] for a in arrays]
    env_ids, run_ids = arrays[0].astype(np.int64), arrays[1]
    self._check_env_ids(env_ids)
    for i, bound, flag in self._bounded_args:
      if arrays[i].dtype.kind == 'f':
        self._check_floats(self._names[i], arrays[i], env_ids, bound, flag)
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
    self._check_owner(env_ids, run_ids)

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

  @staticmethod
  def _check_floats(name: str, values: np.ndarray, env_ids: np.ndarray, bound: float,
                    flag: str) -> None:
    """Refuses rows of `values` that are not finite, or beyond `bound` (0: no bound)."""
    rows = values.reshape(len(env_ids), -1)
    # One pass in the common case: NaN and Inf fail the comparison too (the bound, a float64,
    # is not rounded to a narrower dtype of `values`).
    valid = (np.abs(rows) <= np.float64(bound) if bound else np.isfinite(rows)).all(axis=1)
    if valid.all():
      return
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
      raise ValueError(f'{name} is not finite (NaN or Inf) for env ids '
                       f'{env_ids[~finite].tolist()}: refused so that it cannot reach the '
                       'model.')
    raise ValueError(f'{name} is beyond {bound:g} in absolute value for env ids '
                     f'{env_ids[~valid].tolist()} (the learner\'s --{flag}={bound:g}; 0: no '
                     'bound): refused so that it cannot overflow the model\'s statistics; '
                     'scale the environment\'s values down, or raise the bound.')

  def _check_owner(self, env_ids: np.ndarray, run_ids: np.ndarray) -> None:
    """Records the caller as the owner of `env_ids`, or refuses it if a live actor on another
    stream owns any of them with other run ids."""
    stream = caller.current()
    now = time.monotonic()
    with self._lock:
      changed = self._owned[env_ids] & (run_ids != self._run_ids[env_ids])
      if changed.any():
        owners = self._streams[env_ids[changed]]
        silent = now - self._last_request[env_ids[changed]]
        live = np.array([owner is not stream and not (owner is not None and owner.closed)
                         for owner in owners]) & (silent <= self._grace)
        if live.any():
          self._refuse(env_ids[changed][live], owners[live], silent[live], stream, now)
      self._owned[env_ids] = True
      self._run_ids[env_ids] = run_ids
      self._streams[env_ids] = stream
      self._last_request[env_ids] = now

  def _refuse(self, env_ids: np.ndarray, owners: np.ndarray, silent: np.ndarray,
              stream: Optional[caller.Stream], now: float) -> None:
    """Raises the refusal of a takeover of `env_ids`, whose live `owners` have been `silent`
    for these seconds; warns once per env ids and period (with lock held)."""
    wait = self._grace - silent.min()
    message = (f'env ids {env_ids.tolist()} {call_refusals.OWNED_ENV_IDS}: is another actor '
               'running with the same --task? This call is refused; another actor may take '
               'these env ids over once that connection closes, or once it has sent nothing '
               f'for the learner\'s --actor_takeover_grace_secs={self._grace:g} (in {wait:.0f} s '
               'at the earliest).')
    key = tuple(env_ids.tolist())
    entry = self._warned.get(key)
    if entry is None:
      if len(self._warned) >= _MAX_WARNED_SETS:
        self._warned.pop(next(iter(self._warned)))
      entry = self._warned[key] = [now - _WARNING_PERIOD_SECS, 0]
    entry[1] += 1
    if now - entry[0] >= _WARNING_PERIOD_SECS:
      peers = sorted({owner.peer if owner is not None else 'a direct caller' for owner in owners})
      logging.warning('Refusing %d call(s) from %s: %s (owners: %s, their last request %.1f s '
                      'ago)', entry[1], stream.peer if stream is not None else 'a direct caller',
                      message, ', '.join(peers), silent.min())
      entry[0], entry[1] = now, 0
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
