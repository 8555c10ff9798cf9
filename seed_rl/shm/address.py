"""Where a `shm:NAME` server listens: a unix socket in a directory that only this user can use."""

import os
import re
import stat
import tempfile

PREFIX = 'shm:'
# A name is a file name of the socket directory; the socket path must fit in sun_path (108 bytes).
_NAME = re.compile(r'[A-Za-z0-9_.-]{1,64}')
_SUFFIX = '.sock'


class AddressError(ValueError):
  """A `shm:` address that cannot be used (malformed name, unsafe directory)."""


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


def socket_directory() -> str:
  """This user's directory of rendezvous sockets, `<tmp>/seed_rl_shm_<uid>` (made with mode 0700).

  Raises AddressError if it exists but is not a directory owned by this user that others cannot
  write to: another user could otherwise stand in for the learner.
  """
  path = os.path.join(tempfile.gettempdir(), f'seed_rl_shm_{os.getuid()}')
  try:
    os.mkdir(path, 0o700)
  except FileExistsError:
    pass
  info = os.lstat(path)
  if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or
      info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
    raise AddressError(f'{path} must be a directory of user {os.getuid()} that others cannot '
                       'write to (seed_rl keeps its shared-memory sockets there); remove it, or '
                       'fix its owner and mode (chmod 700).')
  return path


def socket_path(address: str) -> str:
  """The path of the rendezvous socket of `shm:NAME` (made sure its directory is safe)."""
  return os.path.join(socket_directory(), check_name(address) + _SUFFIX)
