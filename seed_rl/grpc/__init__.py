"""Central-inference RPC of seed_rl: `Server` (learner, TensorFlow) and `Client` (actors, no TF).

    from seed_rl import grpc
    server = grpc.Server(['[::]:8686']); server.bind(inference); server.start()
    client = grpc.Client('localhost:8686'); action = client.inference(...)

Actors on the learner's machine may use shared memory instead of gRPC: the address `shm:NAME`
(in `Server([...])` beside gRPC addresses, and in `Client('shm:NAME')`) picks `seed_rl.shm`.

`Server` is imported lazily (module `__getattr__`), so `from seed_rl import grpc` followed by
`grpc.Client(...)` never imports TensorFlow. Inside this package, `import grpc` is grpcio.
"""

from typing import Any

# First: sets the log level of gRPC's C core before grpcio loads (see `security`).
from seed_rl.grpc import security  # noqa: F401  pylint: disable=unused-import
from seed_rl.grpc import errors
from seed_rl.grpc.client import Client
from seed_rl.grpc.errors import (CancelledError, InternalError, InvalidArgumentError, OpError,
                                 ResourceExhaustedError, TrainingFinishedError,
                                 UnauthenticatedError, UnavailableError)

__all__ = ['Client', 'Server', 'errors', 'OpError', 'CancelledError', 'InternalError',
           'InvalidArgumentError', 'ResourceExhaustedError', 'TrainingFinishedError',
           'UnauthenticatedError', 'UnavailableError']


def __getattr__(name: str) -> Any:
  if name == 'Server':
    from seed_rl.grpc.server import Server  # pylint: disable=g-import-not-at-top
    return Server
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
