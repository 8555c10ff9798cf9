"""A learner's `--server_address` may list several addresses; an actor connects to one of them.

One learner serves gRPC and shared-memory actors at once: `--server_address=localhost:8686,
shm:run1` makes it listen on both (one `Server`, one batching). The same list may reach an
actor (run_local.sh passes the learner's flags to its actors, and a user may copy them): an
actor uses the first `shm:` address of the list, since it is given the list on the learner's
machine, where shared memory is the cheaper transport; a list without one gives its first
address. An actor on another machine must be given a gRPC address alone (`host:port`).

No TensorFlow, no grpcio: actors and the launch tools import this.
"""

from typing import List

from seed_rl.shm import address as shm_address

SEPARATOR = ','


class AddressListError(ValueError):
  """A `--server_address` list that cannot be served (an empty item, an address twice)."""


def split(value: str) -> List[str]:
  """The addresses of a comma-separated `--server_address`, in order.

  Raises:
    AddressListError: an item is empty (e.g. a trailing comma) or an address comes twice.
  """
  addresses = [item.strip() for item in value.split(SEPARATOR)]
  if not all(addresses):
    raise AddressListError(
        f'--server_address={value!r} has an empty item; list addresses separated by single '
        'commas, e.g. --server_address=localhost:8686,shm:run1')
  repeated = sorted({a for a in addresses if addresses.count(a) > 1})
  if repeated:
    raise AddressListError(f'--server_address={value!r} lists {", ".join(repeated)} more than '
                           'once; list each address once')
  return addresses


def for_actor(value: str) -> str:
  """The address an actor given `value` connects to: `value` itself when it is one address,
  else the first `shm:` address of the list, else its first address.

  Raises:
    AddressListError: as `split`.
  """
  if SEPARATOR not in value:
    return value
  addresses = split(value)
  return next((a for a in addresses if shm_address.is_shm_address(a)), addresses[0])
