"""Errors raised by the seed_rl RPC client, without importing TensorFlow.

The original SEED RL client raised `tf.errors.*` exceptions. Actors here run without TensorFlow
(which saves its memory and import time in every actor process), so this module defines exceptions with the same class names,
the same integer codes (TensorFlow's error codes, which are also gRPC's status codes) and the same
`.message` / `.error_code` attributes. `make_error` returns the `tf.errors` class instead when
TensorFlow is already imported in the calling process, so learner-side code that catches
`tf.errors.UnavailableError` keeps working.

To catch an error whatever its origin, use the class tuples of `error_classes`, e.g.
`except errors.error_classes(errors.UNAVAILABLE) as e:`.

One status has a class of its own: OUT_OF_RANGE with a message that starts with
`TRAINING_FINISHED` is how a server says that its work is done for good (`Server.finish`: the
learner spent its frame budget). It is raised as `TrainingFinishedError`, this module's class
even when TensorFlow is loaded (TensorFlow has no such class), so that an actor stops on it. Why
OUT_OF_RANGE: it means "past the end" (TensorFlow's end of a sequence) and is not one that gRPC
clients retry, while UNAVAILABLE, which a server that shuts down for a preemption or restart
gives, tells actors to reconnect. The message marker tells it apart from an OUT_OF_RANGE error
that a served function raises (e.g. a closed queue), which must not stop anyone.
"""

import sys
from typing import Dict, Optional, Tuple, Type

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
  """Base class of the RPC errors; mirrors `tf.errors.OpError`.

  Attributes:
    code: the integer error code (TensorFlow / gRPC numbering).
    error_code: the same as `code` (TensorFlow's attribute name).
    message: the error message.
  """

  code = UNKNOWN

  def __init__(self, message: str, code: Optional[int] = None):
    super().__init__(message)
    if code is not None:
      self.code = code
    self.message = message

  @property
  def error_code(self) -> int:
    return self.code

  def __str__(self) -> str:
    return self.message


def _make_class(name: str, code: int) -> Type[OpError]:
  return type(name, (OpError,), {
      'code': code,
      '__doc__': f'RPC error with code {code}; same name as `tf.errors.{name}`.',
      '__module__': __name__,
  })


CancelledError = _make_class('CancelledError', CANCELLED)
UnknownError = _make_class('UnknownError', UNKNOWN)
InvalidArgumentError = _make_class('InvalidArgumentError', INVALID_ARGUMENT)
DeadlineExceededError = _make_class('DeadlineExceededError', DEADLINE_EXCEEDED)
NotFoundError = _make_class('NotFoundError', NOT_FOUND)
AlreadyExistsError = _make_class('AlreadyExistsError', ALREADY_EXISTS)
PermissionDeniedError = _make_class('PermissionDeniedError', PERMISSION_DENIED)
ResourceExhaustedError = _make_class('ResourceExhaustedError', RESOURCE_EXHAUSTED)
FailedPreconditionError = _make_class('FailedPreconditionError', FAILED_PRECONDITION)
AbortedError = _make_class('AbortedError', ABORTED)
OutOfRangeError = _make_class('OutOfRangeError', OUT_OF_RANGE)
UnimplementedError = _make_class('UnimplementedError', UNIMPLEMENTED)
InternalError = _make_class('InternalError', INTERNAL)
UnavailableError = _make_class('UnavailableError', UNAVAILABLE)
DataLossError = _make_class('DataLossError', DATA_LOSS)
UnauthenticatedError = _make_class('UnauthenticatedError', UNAUTHENTICATED)


class TrainingFinishedError(OutOfRangeError):
  """The server's work is done for good (the learner finished training): do not call again."""


#: The start of the message of the OUT_OF_RANGE status that `TrainingFinishedError` stands for.
TRAINING_FINISHED = 'Training finished: the learner serves no more calls'

CLASS_BY_CODE: Dict[int, Type[OpError]] = {
    cls.code: cls for cls in (
        CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
        NotFoundError, AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError,
        FailedPreconditionError, AbortedError, OutOfRangeError, UnimplementedError,
        InternalError, UnavailableError, DataLossError, UnauthenticatedError)
}


def _tf_errors():
  """Returns `tf.errors` if TensorFlow is already imported (never imports it)."""
  tf = sys.modules.get('tensorflow')
  return getattr(tf, 'errors', None) if tf is not None else None


def make_error(code: int, message: str) -> Exception:
  """Returns the exception for an error `code`.

  The `tf.errors` class when TensorFlow is already loaded in this process, else the class of this
  module with the same name. Unknown codes become UnknownError. OUT_OF_RANGE with a message that
  starts with `TRAINING_FINISHED` becomes `TrainingFinishedError`.
  """
  if code == OUT_OF_RANGE and message.startswith(TRAINING_FINISHED):
    return TrainingFinishedError(message)
  cls = CLASS_BY_CODE.get(code, UnknownError)
  tf_errors = _tf_errors()
  if tf_errors is not None:
    tf_cls = getattr(tf_errors, cls.__name__, None)
    if tf_cls is not None:
      return tf_cls(None, None, message)
  return cls(message, code if code in CLASS_BY_CODE else None)


def error_classes(code: int) -> Tuple[Type[BaseException], ...]:
  """The exception classes that an error with `code` may be raised as (for `except`)."""
  classes = [CLASS_BY_CODE.get(code, UnknownError)]
  tf_errors = _tf_errors()
  if tf_errors is not None:
    tf_cls = getattr(tf_errors, classes[0].__name__, None)
    if tf_cls is not None:
      classes.append(tf_cls)
  return tuple(classes)
