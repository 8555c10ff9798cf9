r"""Keeps the runs of run_local.sh apart (no TensorFlow).

  python -m seed_rl.launch.local_run acquire --logdir=DIR --address=ADDRESS --owner_pid=PID \
      --checkout=DIR --registry=DIR [--local_shm] [--tensorboard_port=auto|none|PORT] \
      [--tensorboard_host=HOST] [--tmux] [--prefix=run_local.sh]

`acquire` makes this run the owner of its logdir, its learner's addresses and its TensorBoard
port, or says in one line (exit status 1) which live run holds one of them and how to pick
another. ADDRESS is the learner's --server_address, one address or a comma-separated list.
With `--local_shm` (run_local.sh's default, when the user gave no --server_address) the learner
serves ADDRESS, for actors started elsewhere, and `shm:NAME` (`shm_name`: derived from the
logdir, so that two logdirs never share one) for the run's own actors:

- the logdir: `LOGDIR/run_local.lock` (key=value lines: run_id, owner_pid and owner_start, the
  process that owns the run, host, address, tensorboard_port, pidfile, tmux_session, registry,
  reservation=...). A lock is live while its owner runs (the pid with the same start time, so a
  reused pid does not count), any process in its pid file runs, or its tmux session (which
  carries the run id in the option @seed_rl_run_id) exists. A lock that is not live is stale
  and taken over.
- the ports: a TCP port (of the learner or TensorBoard) is reserved in a file
  `RUNTIME/ports/tcp-PORT` (RUNTIME: $SEED_RL_RUNTIME_DIR, else /tmp/seed_rl-UID), a unix socket
  in `unix-HASH`, a shared-memory address in `shm-NAME`; a reservation is live while the lock of
  its run is. A port must also be free for the system (a bind test; for a unix socket or a
  shared-memory address, nobody answers on its socket), so that learners of other users and
  other programs count too. The learner that holds a taken address is looked up among the
  processes (its --server_address and --logdir) to say which run it is.
- the registry: `REGISTRY/RUN_ID` ("logdir=LOGDIR"), the runs this checkout started, so that
  `stop_local.sh` stops those and no others.

On success it prints `key=value` lines: run_id, lock, pidfile, tensorboard_port (empty for
none), tmux_session (empty unless --tmux; a name of its own per run, `seed_rl_<logdir's
name>_<hash>`), learner_address (the learner's --server_address) and actor_address (its
actors': `shm:NAME` with --local_shm, else ADDRESS). run_local.sh writes the pid file and
releases the lock (scripts/runs.sh, `seed_rl_release_run`) when it ends; stop_local.sh does when
it stops the run.

  python -m seed_rl.launch.local_run free_port [--host=localhost] [--start=PORT]

prints a TCP port that is free and not reserved, from START upwards.
"""

import argparse
import contextlib
import errno
import fcntl
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from typing import Dict, Iterator, List, Optional, Tuple

from seed_rl.grpc import address_list
from seed_rl.shm import address as shm_address

LOCK_NAME = 'run_local.lock'
PIDS_NAME = 'run_local.pids'
#: Ports tried when TensorBoard's port is chosen automatically, and when another learner port
#: is suggested.
PORT_SEARCH = 100


class Refused(Exception):
  """The run may not start; the message is one line."""


# ---------------------------------------------------------------------------------------------
# Records and processes.


def read_record(path: str) -> Dict[str, str]:
  """The key=value lines of `path` (the first value of each key; `reservation` keeps all,
  joined by newlines); {} when it cannot be read."""
  record: Dict[str, str] = {}
  try:
    with open(path, errors='replace') as f:
      lines = f.read().splitlines()
  except OSError:
    return record
  for line in lines:
    key, sep, value = line.partition('=')
    if not sep:
      continue
    if key == 'reservation' and key in record:
      record[key] += '\n' + value
    else:
      record.setdefault(key, value)
  return record


def pid_start(pid: int) -> Optional[str]:
  """Start time of process `pid` (field 22 of /proc/PID/stat), or None when it does not run."""
  try:
    with open(f'/proc/{int(pid)}/stat') as f:
      stat = f.read()
  except (OSError, ValueError):
    return None
  fields = stat.rsplit(')', 1)[-1].split()
  return fields[19] if len(fields) > 19 else None


def pid_alive(pid, start: Optional[str] = None) -> bool:
  try:
    pid = int(pid)
  except (TypeError, ValueError):
    return False
  if pid <= 0:
    return False
  current = pid_start(pid)
  return current is not None and (not start or current == start)


def this_host() -> str:
  """The host name recorded in locks ($SEED_RL_RUN_HOST, e.g. one name for every container on
  a machine, else the host name)."""
  return os.environ.get('SEED_RL_RUN_HOST') or socket.gethostname()


def tmux_session_run_id(session: str) -> Optional[str]:
  """@seed_rl_run_id of the tmux session `session` (exactly that name), None if none."""
  if not session or not shutil.which('tmux'):
    return None
  try:
    if subprocess.run(['tmux', 'has-session', '-t', f'={session}'], capture_output=True,
                      timeout=10).returncode:
      return None
    shown = subprocess.run(['tmux', 'show-options', '-t', f'={session}:', '-qv',
                            '@seed_rl_run_id'], capture_output=True, text=True, timeout=10)
  except (OSError, subprocess.SubprocessError):
    return None
  return shown.stdout.strip() if shown.returncode == 0 else None


def tmux_session_exists(session: str) -> bool:
  if not shutil.which('tmux'):
    return False
  try:
    return subprocess.run(['tmux', 'has-session', '-t', f'={session}'], capture_output=True,
                          timeout=10).returncode == 0
  except (OSError, subprocess.SubprocessError):
    return False


def live_pids(pidfile: str) -> List[Tuple[str, int]]:
  """(name, pid) of the processes of a pid file ("name pid [start]" lines) that still run."""
  alive = []
  try:
    with open(pidfile) as f:
      lines = f.read().splitlines()
  except OSError:
    return alive
  for line in lines:
    words = line.split()
    if len(words) >= 2 and pid_alive(words[1], words[2] if len(words) > 2 else None):
      alive.append((words[0], int(words[1])))
  return alive


def lock_state(lock: Dict[str, str]) -> Optional[str]:
  """None when the run of `lock` is over (a stale lock), else what shows it is live."""
  if not lock.get('run_id'):
    return None
  if lock.get('host', this_host()) != this_host():
    return f'on host {lock["host"]}, where this machine cannot see whether it runs'
  owner = lock.get('owner_pid', '')
  if pid_alive(owner, lock.get('owner_start')):
    return f'run_local.sh pid {owner}'
  session = lock.get('tmux_session', '')
  if session and tmux_session_run_id(session) == lock['run_id']:
    return f'tmux session {session}'
  pids = live_pids(lock.get('pidfile', ''))
  if pids:
    listed = ', '.join(f'{name} {pid}' for name, pid in pids[:3])
    return f'its run_local.sh (pid {owner}) has exited but {listed} still run'
  return None


def describe(lock: Dict[str, str], state: str) -> str:
  parts = [state]
  if lock.get('started'):
    parts.append(f'started {lock["started"]}')
  if lock.get('address'):
    parts.append(f'learner {lock["address"]}')
  if lock.get('checkout'):
    parts.append(f'from {lock["checkout"]}')
  return ', '.join(parts)


# ---------------------------------------------------------------------------------------------
# Addresses and ports.


def parse_address(address: str) -> Tuple[str, str, Optional[int]]:
  """('unix', PATH, None), ('tcp', HOST, PORT), ('shm', NAME, None), or ('other', ADDRESS, None)
  for addresses this module does not check (unix-abstract:, dns:, unparsable ones: the learner
  says why)."""
  if shm_address.is_shm_address(address):
    return 'shm', address[len(shm_address.PREFIX):], None
  if address.startswith('unix:'):
    path = address[len('unix:'):]
    if path.startswith('//'):
      path = path[2:]
    return 'unix', os.path.abspath(path), None
  match = re.fullmatch(r'(\[[^\]]*\]|[^:\[\]]*):(\d+)', address)
  if not match:
    return 'other', address, None
  host = match.group(1)
  if host.startswith('['):
    host = host[1:-1]
  return 'tcp', host, int(match.group(2))


def _bind_hosts(host: str) -> List[Tuple[int, str]]:
  """(family, ip) the learner binds for `host`: both wildcards for '', '::' or '0.0.0.0', every
  address of a name (localhost: 127.0.0.1 and ::1)."""
  if host in ('', '::', '0.0.0.0', '*'):
    return [(socket.AF_INET6, '::'), (socket.AF_INET, '0.0.0.0')]
  try:
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
  except OSError:
    return []
  result = []
  for family, _, _, _, sockaddr in infos:
    if (family, sockaddr[0]) not in result and family in (socket.AF_INET, socket.AF_INET6):
      result.append((family, sockaddr[0]))
  return result


def tcp_port_free(host: str, port: int) -> bool:
  """Can a server (without SO_REUSEPORT, as the learner) listen on host:port now?"""
  for family, ip in _bind_hosts(host):
    with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as s:
      s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      if family == socket.AF_INET6 and ip == '::':
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
      try:
        s.bind((ip, port))
      except OSError as e:
        if e.errno == errno.EADDRINUSE:
          return False
        # EADDRNOTAVAIL, EAFNOSUPPORT (no IPv6 here), EACCES (a privileged port): the learner
        # gets the same error and says it; not a run holding the address.
  return True


def unix_socket_live(path: str) -> bool:
  """Does a server answer on the unix socket `path`? (A left-over file of a dead one does not
  count: the learner replaces it.)"""
  if not os.path.exists(path):
    return False
  with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as s:
    s.settimeout(2)
    try:
      s.connect(path)
    except OSError:
      return False
  return True


def _cmdline(pid: str) -> List[str]:
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      return [a.decode(errors='replace') for a in f.read().split(b'\0') if a]
  except OSError:
    return []


def _flag(argv: List[str], *names: str) -> Optional[str]:
  value = None
  for argument in argv:
    for name in names:
      if argument.startswith(f'--{name}='):
        value = argument.split('=', 1)[1]
  return value


def find_learner(address: str) -> Optional[Tuple[int, str]]:
  """(pid, logdir) of a running seed_rl learner that listens on `address` (the same port, or
  the same unix socket or shared-memory name; any address of its list), from the command
  lines of the processes."""
  kind, where, port = parse_address(address)
  for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):
    argv = _cmdline(pid)
    if '--run_mode=learner' not in argv or int(pid) == os.getpid():
      continue
    listed = (_flag(argv, 'server_address') or 'localhost:8686').split(address_list.SEPARATOR)
    for other in listed:
      other_kind, other_where, other_port = parse_address(other.strip())
      if (kind, port) == ('tcp', other_port) and other_kind == 'tcp' or (
          kind == other_kind and kind in ('unix', 'shm') and where == other_where):
        return int(pid), _flag(argv, 'logdir', 'job-dir') or '/tmp/agent'
  return None


def runtime_dir() -> Optional[str]:
  """This user's directory of port reservations, None where it cannot be made safely."""
  path = os.environ.get('SEED_RL_RUNTIME_DIR') or f'/tmp/seed_rl-{os.getuid()}'
  try:
    os.makedirs(os.path.join(path, 'ports'), mode=0o700, exist_ok=True)
    info = os.lstat(path)
  except OSError:
    return None
  if info.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path):
    return None
  return path


def reservation_key(address: str) -> Optional[str]:
  kind, where, port = parse_address(address)
  if kind == 'tcp' and port:
    return f'tcp-{port}'
  if kind == 'unix':
    return 'unix-' + hashlib.sha256(where.encode()).hexdigest()[:16]
  if kind == 'shm':
    return f'shm-{where}'
  return None


def reservation_holder(runtime: Optional[str], key: Optional[str]) -> Optional[
    Tuple[Dict[str, str], str]]:
  """(lock, state) of the live run that reserved `key`; a stale reservation is removed."""
  if not runtime or not key:
    return None
  path = os.path.join(runtime, 'ports', key)
  reservation = read_record(path)
  if not reservation:
    return None
  lock = read_record(os.path.join(reservation.get('logdir', ''), LOCK_NAME))
  if lock.get('run_id') == reservation.get('run_id'):
    state = lock_state(lock)
    if state:
      return lock, state
  with contextlib.suppress(OSError):
    os.remove(path)
  return None


def free_port(host: str, start: int, runtime: Optional[str], avoid=()) -> Optional[int]:
  """The first TCP port from `start` that is free, not reserved by a live run, not in avoid."""
  for port in range(start, min(start + PORT_SEARCH, 65536)):
    if port in avoid or reservation_holder(runtime, f'tcp-{port}'):
      continue
    if tcp_port_free(host, port):
      return port
  return None


# ---------------------------------------------------------------------------------------------
# acquire.


@contextlib.contextmanager
def _mutex(runtime: Optional[str]) -> Iterator[None]:
  """Serializes the acquisitions of this user's runs (checks, take-overs and reservations)."""
  if not runtime:
    yield
    return
  with open(os.path.join(runtime, 'acquire.lock'), 'a') as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def tmux_session_name(logdir: str) -> str:
  """seed_rl_<the logdir's name>_<4 hex digits of its path>: one name per logdir, which tmux
  accepts (no '.' or ':')."""
  name = re.sub(r'[^A-Za-z0-9_-]', '_', os.path.basename(logdir.rstrip('/')) or 'run')[:40]
  return f'seed_rl_{name}_{hashlib.sha256(logdir.encode()).hexdigest()[:4]}'


def shm_name(logdir: str) -> str:
  """The shared-memory address of the run in `logdir` (an absolute path): `shm:<the logdir's
  name>_<12 hex digits of its path>`, one per logdir, short enough for a socket path."""
  name = re.sub(r'[^A-Za-z0-9_-]', '_', os.path.basename(logdir.rstrip('/')) or 'run')[:24]
  return f'{shm_address.PREFIX}{name}_{hashlib.sha256(logdir.encode()).hexdigest()[:12]}'


def _suggest_address(address: str, runtime: Optional[str]) -> str:
  kind, host, port = parse_address(address)
  if kind == 'tcp':
    other = free_port(host, port + 1, runtime)
    if other:
      shown = f'[{host}]' if ':' in host else host
      return f'--server_address={shown}:{other} (free now)'
    return '--server_address=HOST:PORT'
  if kind == 'unix':
    return f'--server_address=unix:{host}.2'
  if kind == 'shm':
    return f'--server_address=shm:{host}.2'
  return '--server_address=HOST:PORT'


def _write_exclusive(path: str, text: str) -> bool:
  try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
  except FileExistsError:
    return False
  with os.fdopen(fd, 'w') as f:
    f.write(text)
  return True


def _learner_addresses(address: str, logdir: str, local_shm: bool) -> List[str]:
  """The addresses the learner of the run in `logdir` serves: `address` (a comma-separated
  list), and with `local_shm` the run's own shared-memory address too."""
  try:
    addresses = address_list.split(address)
  except address_list.AddressListError as e:
    raise Refused(str(e)) from None
  if local_shm:
    addresses.append(shm_name(logdir))
  return addresses


def _check_address(address: str, runtime: Optional[str], derived: bool,
                   local_shm: Optional[str] = None) -> None:
  """Raises Refused when a live run holds the learner address `address` or something else
  serves it now; `derived`: a shared-memory address that this module derived from the logdir
  (another logdir is then the way out); `local_shm`: that address, which the suggested
  --server_address lists too, so that the run's actors keep using shared memory."""
  if derived:
    remedy = 'give this run another --logdir=DIR'
  else:
    suggestion = _suggest_address(address, runtime)
    if local_shm:
      suggestion = suggestion.replace(' (free now)', f',{local_shm} (free now)', 1)
    remedy = f'pick another with {suggestion} (and another --logdir=DIR)'
  holder = reservation_holder(runtime, reservation_key(address))
  if holder:
    other, state = holder
    raise Refused(
        f'the learner address {address} is taken by the run in {other.get("logdir")} '
        f'({describe(other, state)}); {remedy}, or stop that run with ./stop_local.sh '
        f'--logdir={other.get("logdir")}')
  kind, host, port = parse_address(address)
  if kind == 'shm':
    try:
      taken = shm_address.is_served(address)
    except shm_address.AddressError as e:
      raise Refused(str(e)) from None
  else:
    taken = (kind == 'tcp' and port and not tcp_port_free(host, port)) or (
        kind == 'unix' and unix_socket_live(host))
  if taken:
    learner = find_learner(address)
    who = (f'the learner pid {learner[0]} of the run in {learner[1]}' if learner else
           'another program')
    raise Refused(f'the learner address {address} is in use by {who}; {remedy}')


def acquire(logdir: str, address: str, owner_pid: int, checkout: str, registry: str,
            tensorboard_port: str = 'auto', tensorboard_host: str = 'localhost',
            tmux: bool = False, local_shm: bool = False) -> Dict[str, str]:
  """Makes the run of `owner_pid` the owner of `logdir`, the learner's `address` (a
  comma-separated list; with `local_shm` also `shm_name(logdir)`, for the run's own actors) and
  a TensorBoard port; returns the lock's fields and the learner's and actors' addresses, or
  raises Refused (see the module's doc)."""
  logdir = os.path.abspath(logdir)
  os.makedirs(logdir, exist_ok=True)
  lock_path = os.path.join(logdir, LOCK_NAME)
  runtime = runtime_dir()
  addresses = _learner_addresses(address, logdir, local_shm)
  learner_address = address_list.SEPARATOR.join(addresses)
  actor_address = addresses[-1] if local_shm else address
  # The address that a refusal suggests changing: a gRPC one, where the list has one.
  suggested = next((a for a in addresses if parse_address(a)[0] in ('tcp', 'unix')),
                   addresses[0])
  tcp_ports = {parse_address(a)[2] for a in addresses if parse_address(a)[0] == 'tcp'}
  with _mutex(runtime):
    # 1. The logdir.
    lock = read_record(lock_path)
    if lock:
      state = lock_state(lock)
      if state:
        remedy = f'stop that one with ./stop_local.sh --logdir={logdir}'
        if state.startswith('on host'):
          remedy = f'remove {lock_path} if that run is over'
        raise Refused(
            f'the logdir {logdir} is in use by another run ({describe(lock, state)}); give '
            f'this run another --logdir=DIR and {_suggest_address(suggested, runtime)}, or '
            f'{remedy}')
      with contextlib.suppress(OSError):
        os.remove(lock_path)  # Stale: its run is over.
    elif os.path.exists(lock_path):
      with contextlib.suppress(OSError):  # Empty or unreadable: a run that died writing it.
        os.remove(lock_path)

    # 2. The learner's addresses.
    derived = addresses[-1] if local_shm else None
    for index, each in enumerate(addresses):
      _check_address(each, runtime, derived=local_shm and index == len(addresses) - 1,
                     local_shm=derived)

    # 3. TensorBoard's port.
    if tensorboard_port in ('', 'none'):
      board = None
    elif tensorboard_port == 'auto':
      board = free_port(tensorboard_host, 6006, runtime, avoid=tcp_ports)
      if board is None:
        raise Refused(f'no free TensorBoard port in 6006-{6006 + PORT_SEARCH - 1}; set '
                      'SEED_RL_TENSORBOARD_PORT=PORT or SEED_RL_NO_TENSORBOARD=1')
    else:
      try:
        board = int(tensorboard_port)
      except ValueError:
        raise Refused(f'SEED_RL_TENSORBOARD_PORT must be a port number, got '
                      f'{tensorboard_port!r}') from None
      holder = reservation_holder(runtime, f'tcp-{board}')
      if board in tcp_ports or holder or not tcp_port_free(tensorboard_host, board):
        who = (f' by the run in {holder[0].get("logdir")} ({describe(*holder)})' if holder
               else '')
        raise Refused(f'TensorBoard port {board} (SEED_RL_TENSORBOARD_PORT) is in use{who}; '
                      'pick another, or unset SEED_RL_TENSORBOARD_PORT to use a free one')

    # 4. Write the lock, the reservations and the registry entry.
    session = ''
    if tmux:
      session = base = tmux_session_name(logdir)
      suffix = 2
      while tmux_session_exists(session):  # Left by a run whose lock was removed by hand.
        session = f'{base}_{suffix}'
        suffix += 1
    run_id = f'{time.strftime("%Y%m%d-%H%M%S")}-{owner_pid}'
    reservations = []
    if runtime:
      keys = [reservation_key(a) for a in addresses] + ([f'tcp-{board}'] if board else [])
      reservations = [os.path.join(runtime, 'ports', k) for k in keys if k]
    fields = [
        ('run_id', run_id), ('owner_pid', str(owner_pid)),
        ('owner_start', pid_start(owner_pid) or ''), ('host', this_host()),
        ('started', time.strftime('%Y-%m-%d %H:%M:%S')), ('logdir', logdir),
        ('address', learner_address), ('tensorboard_port', str(board or '')),
        ('pidfile', os.path.join(logdir, PIDS_NAME)), ('tmux_session', session),
        ('checkout', checkout), ('registry', registry),
    ] + [('reservation', r) for r in reservations]
    text = ''.join(f'{k}={v}\n' for k, v in fields)
    if not _write_exclusive(lock_path, text):  # Another user's run, a moment ago.
      other = read_record(lock_path)
      raise Refused(f'the logdir {logdir} is in use by another run ('
                    f'{describe(other, lock_state(other) or "starting")}); give this run '
                    'another --logdir=DIR')
    with contextlib.suppress(OSError):
      os.remove(os.path.join(logdir, PIDS_NAME))  # The pid file of an earlier run.
    for reservation in reservations:
      with open(reservation, 'w') as f:
        f.write(f'run_id={run_id}\nlogdir={logdir}\n')
    os.makedirs(registry, exist_ok=True)
    with open(os.path.join(registry, run_id), 'w') as f:
      f.write(f'logdir={logdir}\n')
  return dict(run_id=run_id, lock=lock_path, pidfile=os.path.join(logdir, PIDS_NAME),
              tensorboard_port=str(board or ''), tmux_session=session,
              learner_address=learner_address, actor_address=actor_address)


def main(argv: List[str]) -> int:
  parser = argparse.ArgumentParser(prog='python -m seed_rl.launch.local_run',
                                   description=__doc__.split('\n\n')[0])
  commands = parser.add_subparsers(dest='command', required=True)
  take = commands.add_parser('acquire')
  take.add_argument('--logdir', required=True)
  take.add_argument('--address', required=True)
  take.add_argument('--owner_pid', type=int, required=True)
  take.add_argument('--checkout', required=True)
  take.add_argument('--registry', required=True)
  take.add_argument('--tensorboard_port', default='auto')
  take.add_argument('--tensorboard_host', default='localhost')
  take.add_argument('--tmux', action='store_true')
  take.add_argument('--local_shm', action='store_true')
  take.add_argument('--prefix', default='run_local.sh')
  port = commands.add_parser('free_port')
  port.add_argument('--host', default='localhost')
  port.add_argument('--start', type=int, default=6006)
  args = parser.parse_args(argv[1:])
  if args.command == 'free_port':
    found = free_port(args.host, args.start, runtime_dir())
    if found is None:
      return 1
    print(found)
    return 0
  try:
    result = acquire(args.logdir, args.address, args.owner_pid, args.checkout, args.registry,
                     args.tensorboard_port, args.tensorboard_host or 'localhost', args.tmux,
                     args.local_shm)
  except Refused as e:
    print(f'{args.prefix}: {e}', file=sys.stderr)
    return 1
  except OSError as e:
    print(f'{args.prefix}: cannot take the logdir {args.logdir}: {e}', file=sys.stderr)
    return 1
  for key, value in result.items():
    print(f'{key}={value}')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
