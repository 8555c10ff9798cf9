"""Where a `shm:NAME` server listens: a unix socket in Linux's abstract namespace, named after
this user and NAME.

An abstract socket has no file: the kernel frees its name when the last process holding it
closes it or dies, so a learner killed with SIGKILL leaves nothing behind and a live one cannot
be stood in for. Any user of the machine (of the network namespace: in a container, of the
container) may connect to an abstract socket, so both sides check the other's user with
SO_PEERCRED (`peer_user`): a server serves only its own user's clients, and a client talks only
to a server of its own user.
"""

import os
import re
import socket
import struct
from typing import Tuple

PREFIX = 'shm:'
# A name is a plain file name (no path separators), so that it reads the same in logs and flags.
_NAME = re.compile(r'[A-Za-z0-9_.-]{1,64}')
_PEER_CREDENTIALS = struct.Struct('3i')


class AddressError(ValueError):
  """A `shm:` address that cannot be used (malformed name)."""


def is_shm_address(address: str) -> bool:
  """True if `address` names the shared-memory transport (`shm:NAME`)."""
  return isinstance(address, str) and address.startswith(PREFIX)


def check_name(address: str) -> str:
  """The NAME of `shm:NAME`; raises AddressError for a name that is not a plain file name."""
  name = address[len(PREFIX):]
  if not _NAME.fullmatch(name) or name in ('.', '..'):
    raise AddressError(
        f'{address!r} is not a shared-memory address: use shm:NAME with NAME of 1 to 64 letters, '
        'digits, "_", "-" or "." (no path separators), e.g. shm:learner.')
  return name


def socket_address(address: str) -> str:
  """The abstract unix socket address of `shm:NAME` for this user (a leading NUL byte)."""
  return f'\0seed_rl_shm_{os.getuid()}_{check_name(address)}'


def peer_user(sock: socket.socket) -> Tuple[int, int]:
  """(pid, uid) of the process at the other end of the connected unix socket `sock`."""
  pid, uid, _ = _PEER_CREDENTIALS.unpack(
      sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER_CREDENTIALS.size))
  return pid, uid


def is_served(address: str) -> bool:
  """Does a server listen at `shm:NAME` (this user's name) now?"""
  with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
    probe.settimeout(2)
    try:
      probe.connect(socket_address(address))
    except OSError:
      return False
  return True
