"""Lets tf.Modules log tensors from deep inside a computation.

A module with the `LoggingModule` mixin calls `self.log(key, tensor)`
wherever a value is worth a summary, without returning it. Outside a
`LoggingTape` the call does nothing. Inside one, the tensor lands in the
tape's dictionary, so the caller (typically a `tf.function` training step)
can return everything logged during the call:

    class Loss(tf.Module, LoggingModule):
      def __call__(self, x):
        self.log('Loss/mean_x', tf.reduce_mean(x))
        ...

    @tf.function
    def step(x):
      with LoggingTape(loss) as logs:
        value = loss(x)
      return value, logs

This works in graphs because nothing but Python bookkeeping happens at trace
time. Tapes are per thread: a MirroredStrategy runs (and traces) each
replica's function in its own thread, so a tape entered inside the replica
function (as in a training step under `strategy.run`) collects that
replica's tensors only, and the replicas never see each other's keys. A tape
entered outside `strategy.run` therefore sees nothing logged by replicas.
"""

import collections
import threading
from typing import Any, Iterable, List, MutableMapping, Optional, Union

import tensorflow as tf


class ModuleAlreadyTapedError(RuntimeError):
  """A module is already recording into a tape of the same thread."""


# Per thread: id(module) -> the dictionary its `log` writes into. Kept out of
# the modules themselves, whose attributes tf.Module and Keras would track
# (wrapping dictionaries and trying to checkpoint the logged tensors).
_THREAD_STATE = threading.local()


def _destinations() -> dict:
  destinations = getattr(_THREAD_STATE, 'destinations', None)
  if destinations is None:
    destinations = _THREAD_STATE.destinations = {}
  return destinations


class LoggingModule:
  """Mixin giving a module `log(key, tensor)`, a no-op unless taped."""

  def log(self, key: str, tensor: tf.Tensor) -> None:
    """Records `tensor` under `key` in this thread's installed dict, if any.

    Raises:
      ValueError: With a dictionary installed, if `key` is already in it or
        `tensor` is not a tensor (a variable is recorded as its current
        value).
    """
    logs = self._logging_dict
    if logs is None:
      return
    if key in logs:
      raise ValueError(f'Logging key {key!r} already exists in the current '
                       'logging context')
    if not tf.is_tensor(tensor):
      raise ValueError(f'Logged value {key!r} needs to be a Tensor, got '
                       f'{type(tensor).__name__}')
    if isinstance(tensor, tf.Variable):
      tensor = tensor.read_value()
    logs[key] = tensor

  @property
  def _logging_dict(self) -> Optional[MutableMapping[str, tf.Tensor]]:
    """The dictionary installed for the current thread, or None."""
    return _destinations().get(id(self))

  def set_logging_dict(self, logging_dict: MutableMapping[str, tf.Tensor]
                       ) -> None:
    """Makes `log`, in this thread, write into `logging_dict` (that object).

    Raises:
      ValueError: If `logging_dict` is not a dict.
      ModuleAlreadyTapedError: If this thread installed a dictionary already.
    """
    if not isinstance(logging_dict, dict):
      raise ValueError('logging_dict must be a dict, got '
                       f'{type(logging_dict).__name__}')
    destinations = _destinations()
    if id(self) in destinations:
      raise ModuleAlreadyTapedError(f'Module {self!r} is already taped')
    destinations[id(self)] = logging_dict

  def unset_logging_dict(self) -> None:
    """Makes `log` a no-op again in this thread."""
    _destinations().pop(id(self), None)


ModuleOrModules = Union[tf.Module, LoggingModule, Iterable[Any]]


def _tracked_modules(tracked: ModuleOrModules) -> List[LoggingModule]:
  """The distinct LoggingModules among `tracked` (and its submodules)."""
  if isinstance(tracked, tf.Module):
    candidates = [tracked, *tracked.submodules]
  elif isinstance(tracked, LoggingModule):
    candidates = [tracked]
  else:
    candidates = list(tracked)
  modules, seen = [], set()
  for module in candidates:
    if isinstance(module, LoggingModule) and id(module) not in seen:
      seen.add(id(module))
      modules.append(module)
  return modules


class LoggingTape:
  """Context manager collecting what LoggingModules log into one dictionary.

  `with LoggingTape(modules) as logs:` installs one new `OrderedDict` (in
  logging order) into every tracked LoggingModule, for the current thread,
  and removes it on exit; `logs` keeps the entries afterwards. Tapes on
  disjoint modules may nest; taping a module twice in one thread raises
  `ModuleAlreadyTapedError`.
  """

  def __init__(self, tracked_modules: ModuleOrModules):
    """Creates the tape.

    Args:
      tracked_modules: A tf.Module, meaning it and its submodules as they
        are now, or an iterable of modules. Modules without the
        LoggingModule mixin are ignored.
    """
    self._modules = _tracked_modules(tracked_modules)
    self._installed = []

  def __enter__(self) -> 'collections.OrderedDict[str, tf.Tensor]':
    logs = collections.OrderedDict()
    try:
      for module in self._modules:
        module.set_logging_dict(logs)
        self._installed.append(module)
    except BaseException:
      self._uninstall()
      raise
    return logs

  def __exit__(self, exc_type, exc_value, traceback) -> None:
    del exc_type, exc_value, traceback
    self._uninstall()

  def _uninstall(self) -> None:
    for module in self._installed:
      module.unset_logging_dict()
    self._installed = []
