"""What a learner's logdir says about how it ran: environment, agent, entry point and flags.

A learner records how it was started (`seed_rl.common.learner_runtime.run_record`):
`runs.jsonl` (one JSON line per start: entry point module, environment factory, agent) and
`learner_flags.txt` (its flags, one `--name=value` a line). This module is the one reader of
those records (`last_start` for `seed_rl.evaluate`, `read_record` for `seed_rl.plot`) and names
their files for the writer too. `seed_rl.plot` compares these records
so that it averages runs only as seeds of one setup: runs are seeds of one setup where their
`Identity` is equal, i.e. the same environment, agent, entry point and flags, except for the
flags that name one run rather than its setup (`PER_RUN_FLAGS`).

Reads plain files and JSON only (no TensorFlow), like the rest of `seed_rl.plot` and the
error paths of `seed_rl.evaluate`.
"""

import dataclasses
import json
import os
from typing import Mapping, Optional, Sequence

# The files `seed_rl.common.learner_runtime.run_record` writes (it imports TensorFlow, which
# the readers do without, so the names are defined here).
RUNS_FILE = 'runs.jsonl'
FLAGS_FILE = 'learner_flags.txt'

# Flags that name the environment: a Gymnasium id (gym, mujoco), an Atari game, a DMLab level or
# a Football scenario (`game`).
ENV_FLAGS = ('env_name', 'game')
# Flags in which the seeds of one setup may differ: what names or places one run (its seed, logdir,
# address, task, credentials, checkpoint to start from, data paths) and what only changes what it
# writes (checkpoint cadence, rendering, how often episodes are logged).
PER_RUN_FLAGS = frozenset([
    'logdir', 'job-dir', 'seed', 'server_address', 'run_mode', 'task', 'grpc_token_file',
    'grpc_tls_cert_file', 'grpc_tls_key_file', 'grpc_tls_ca_file', 'init_checkpoint',
    'homepath', 'dataset_path', 'level_cache_dir', 'save_checkpoint_secs',
    'checkpoints_to_keep', 'render', 'render_mode', 'log_episode_frequency', 'fresh_start',
    'actor_takeover_grace_secs', 'refuse_observations_above', 'refuse_rewards_above'])
SEPARATOR = ' · '


class RecordError(ValueError):
  """A run record that cannot be read; the message names the file and what is wrong with it."""


def decode_text(data: bytes, path: str) -> str:
  """`data`, the content of the record file `path`, as text.

  Raises:
    RecordError: it is not UTF-8 (a damaged or overwritten file), naming the first bad byte.
  """
  try:
    return data.decode('utf-8')
  except UnicodeDecodeError as e:
    raise RecordError(f'{path} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset '
                      f'{e.start}), so it is damaged') from e


def read_text(path: str) -> str:
  """The text of the local record file `path`.

  Raises:
    RecordError: it is a directory, cannot be read or is not UTF-8 text, naming it.
  """
  if os.path.isdir(path):
    raise RecordError(f'{path} is a directory, not a file')
  try:
    with open(path, 'rb') as f:
      data = f.read()
  except OSError as e:
    raise RecordError(f'{path} cannot be read ({e.strerror or e})') from e
  return decode_text(data, path)


@dataclasses.dataclass(frozen=True)
class RunRecord:
  """How a logdir's learner was started (its last start, as the flags file is its last too)."""
  logdir: str
  entry_point: Optional[str]
  agent: Optional[str]
  # By flag name: the flag's lines as written ('--name=value', '--name', '--noname'); None for a
  # logdir without `learner_flags.txt`.
  flags: Optional[Mapping[str, str]]

  @property
  def env(self) -> Optional[str]:
    """The environment the flags name (see `ENV_FLAGS`), or None."""
    for name in ENV_FLAGS:
      line = (self.flags or {}).get(name, '')
      if line.startswith(f'--{name}='):
        return line.partition('=')[2]
    return None


@dataclasses.dataclass(frozen=True)
class Identity:
  """The setup of a run among the runs plotted with it: equal identities are seeds of one setup.

  `flags` holds the flags in which it differs from runs of the same environment and agent
  (`--name=value`, or `--name unset` where it lacks one another run has); the entry point is
  shown in the label only where it differs among them too.
  """
  env: Optional[str]
  agent: Optional[str]
  entry_point: Optional[str]
  flags: tuple = ()
  show_entry_point: bool = False
  has_flags_file: bool = True

  @property
  def label(self) -> str:
    """E.g. 'CartPole-v1 · VTRACE · --learning_rate=0.001'."""
    parts = [self.env or 'unknown environment', self.agent or 'unknown agent']
    if self.show_entry_point:
      parts.append(self.entry_point or 'unknown entry point')
    if not self.has_flags_file:
      parts.append(f'no {FLAGS_FILE}')
    return SEPARATOR.join(parts + list(self.flags))


def has_record(logdir: str) -> bool:
  """Whether `logdir` holds a run record (either file, or something in its place)."""
  return any(os.path.lexists(os.path.join(logdir, name)) for name in (RUNS_FILE, FLAGS_FILE))


def find_run_logdirs(parent: str) -> list[str]:
  """The directories below `parent` (not itself) that hold a run record, sorted; a run's own
  subdirectories are not searched."""
  found = []
  for root, dirs, _ in os.walk(parent):
    if root != parent and has_record(root):
      found.append(root)
      dirs.clear()
    dirs.sort()
  return sorted(found)


def _parse_flags(text: str) -> dict[str, str]:
  """{name: its lines} of a flags file; a flag given on several lines (a multi-flag) keeps all."""
  flags = {}
  for line in text.splitlines():
    line = line.strip()
    if not line.startswith('--'):
      continue
    name = line[2:].partition('=')[0]
    flags[name] = f'{flags[name]} {line}' if name in flags else line
  return flags


@dataclasses.dataclass(frozen=True)
class Start:
  """One learner start, as a line of `runs.jsonl` records it (None where it does not say)."""
  # The module the learner ran as (`python -m MODULE`); None for a script run by path.
  entry_point: Optional[str] = None
  # The entry point's absolute file. Records of learners older than `entry_point_file` show it
  # only as `argv[0]`, taken where it is a `.py` file (relative: from the current directory).
  entry_point_file: Optional[str] = None
  create_env_fn: Optional[str] = None  # 'package.module:function'.
  agent: Optional[str] = None


def _recorded_file(entry: Mapping) -> Optional[str]:
  """`entry`'s entry point file, else its `argv[0]` where that is a `.py` file."""
  if entry.get('entry_point_file'):
    return entry['entry_point_file']
  argv = entry.get('argv') or [None]
  if isinstance(argv[0], str) and argv[0].endswith('.py'):
    return os.path.abspath(argv[0])
  return None


# The fields of a `runs.jsonl` line that readers use, and the JSON types each may have.
_FIELD_TYPES = {'entry_point': str, 'entry_point_file': str, 'create_env_fn': str,
                'agent': str, 'argv': list}


def _check_fields(entry: Mapping, path: str) -> None:
  """Raises RecordError where a field readers use has the wrong type (null is allowed)."""
  for name, kind in _FIELD_TYPES.items():
    value = entry.get(name)
    if value is not None and not isinstance(value, kind):
      raise RecordError(f'{path}: its last line has {name} {json.dumps(value)[:80]}, not a '
                        f'{"list" if kind is list else "string"}, so it is damaged')


def last_start(text: str, path: str) -> Start:
  """The last start that `text`, the content of the runs file `path`, records (an empty
  `Start` for a file without lines); `path` names the file in errors. Takes the text rather
  than the path so that callers read remote logdirs (`gs://`) their own way.

  Raises:
    RecordError: its last line is not a JSON object with fields of the types a learner writes.
  """
  lines = [line for line in text.splitlines() if line.strip()]
  if not lines:
    return Start()
  try:
    entry = json.loads(lines[-1])
  except json.JSONDecodeError as e:
    raise RecordError(f'{path}: its last line is not JSON ({e})') from e
  if not isinstance(entry, dict):
    raise RecordError(f'{path}: its last line is not a JSON object')
  _check_fields(entry, path)
  return Start(entry.get('entry_point'), _recorded_file(entry), entry.get('create_env_fn'),
               entry.get('agent'))


def read_record(logdir: str) -> Optional[RunRecord]:
  """The run record of `logdir`, or None where it has neither file (logdirs of older learners).

  Raises:
    RecordError: a record file that cannot be read (a directory, unreadable, not UTF-8), or
      `runs.jsonl` whose last line is not a JSON object of the fields a learner writes.
  """
  runs_path, flags_path = (os.path.join(logdir, name) for name in (RUNS_FILE, FLAGS_FILE))
  if not has_record(logdir):
    return None
  exists = os.path.lexists
  start = last_start(read_text(runs_path), runs_path) if exists(runs_path) else Start()
  flags = _parse_flags(read_text(flags_path)) if exists(flags_path) else None
  # A script run by path has no module name; its file's name tells it apart.
  entry_point = start.entry_point or os.path.basename(start.entry_point_file or '')
  return RunRecord(logdir, entry_point or None, start.agent, flags)


def _by_canonical_name(flags: Mapping[str, str], names: set) -> dict[str, str]:
  """Keys a false boolean (absl writes `--noX`) by X where some run has a flag named X."""
  canonical = {}
  for name, line in flags.items():
    if name.startswith('no') and name[2:] in names and line == f'--{name}':
      name = name[2:]
    canonical[name] = line
  return canonical


def _compared_flags(record: RunRecord, names: set) -> Optional[dict[str, str]]:
  if record.flags is None:
    return None
  return {name: line for name, line in _by_canonical_name(record.flags, names).items()
          if name not in PER_RUN_FLAGS and name not in ENV_FLAGS}


def identities(records: Sequence[Optional[RunRecord]]) -> list[Optional[Identity]]:
  """The `Identity` of each record among `records` (None for None: no record).

  Flags are compared among records of the same environment and agent: those whose values differ
  there are part of each one's identity, the others are left out of labels.
  """
  names = set()
  for record in records:
    names.update((record.flags or {}) if record else ())
  compared = [_compared_flags(record, names) if record else None for record in records]
  setups = {}  # (env, agent) -> indices of its records.
  for index, record in enumerate(records):
    if record:
      setups.setdefault((record.env, record.agent), []).append(index)
  result: list[Optional[Identity]] = [None] * len(records)
  for (env, agent), indices in setups.items():
    with_flags = [compared[i] for i in indices if compared[i] is not None]
    all_names = sorted(set().union(*with_flags))
    differing = [name for name in all_names
                 if len({flags.get(name) for flags in with_flags}) > 1]
    show_entry_point = len({records[i].entry_point for i in indices}) > 1
    for i in indices:
      flags = compared[i]
      result[i] = Identity(
          env, agent, records[i].entry_point,
          tuple(flags.get(name, f'--{name} unset') for name in differing)
          if flags is not None else (),
          show_entry_point, has_flags_file=flags is not None)
  return result
