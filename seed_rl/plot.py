r"""Learning curves of learner runs, read from their TensorBoard event files.

  python -m seed_rl.plot runs/vtrace/seed1 runs/vtrace/seed2 runs/r2d2/seed1 --out curves.png
  python -m seed_rl.plot runs --out curves.png  # every run logdir under runs/

Reads one scalar (`--tag`, default `episode_return`) from every event file under each logdir
(recursively; the files of a restarted learner are merged). A logdir that is a parent of run
logdirs (no event files and no run record directly, run logdirs with `runs.jsonl` below) stands
for each of them.

Runs are grouped by what they ran (`--label_by identity`, the default;
`seed_rl.common.config.run_identity`): the environment, agent, entry point and flags their
learners recorded (`runs.jsonl`, `learner_flags.txt`), less the flags that name one run (seed,
logdir, address, ...). Runs with
the same identity are the seeds of one group, labelled e.g. "CartPole-v1 · VTRACE" plus the
flags in which it differs from other groups of that environment and agent; logdirs without a
run record (older learners) are grouped by their parent directory. `--label_by parent` groups by
parent directory and `--label_by name` plots each logdir alone; neither may average runs whose
records differ (an error). The seeds of a group are interpolated onto a common x grid over the
range where all of them have data and drawn as their mean with a min-max band, each environment
in a panel of its own. `--out` writes a PNG, `--csv` the curves (group, x, mean, min, max,
n_seeds and the group's env, agent, entry_point and differing flags); with neither, a short
summary is printed. x is environment frames (the step of the learners' summaries) or, with
`--x time`, minutes since the run's first event.

It reads event files with TensorBoard's own record reader and protos, without TensorFlow.
Values that are not finite (NaN, Inf) are left out, and a file that ends inside a record (still
being written, or a copy cut short) is read up to there, each with a warning naming the file;
a corrupt file (a record that fails its CRC check) is an error naming it.
"""

import argparse
import csv
import dataclasses
import logging
import os
import sys
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

from google.protobuf import message
import numpy as np
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto import types_pb2
from tensorboard.compat.tensorflow_stub import errors as tb_errors
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
from tensorboard.util import tensor_util

from seed_rl.common.config import run_identity

if TYPE_CHECKING:
  from matplotlib.figure import Figure

X_AXES = {'frames': 'environment frames', 'time': 'minutes'}
LABEL_BY = ('identity', 'parent', 'name')
DEFAULT_TAG = 'episode_return'
CSV_COLUMNS = ('group', 'x', 'mean', 'min', 'max', 'n_seeds', 'env', 'agent', 'entry_point',
               'flags')

_logger = logging.getLogger(__name__)
_NUMERIC_DTYPES = frozenset([
    types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_HALF, types_pb2.DT_BFLOAT16,
    types_pb2.DT_INT8, types_pb2.DT_INT16, types_pb2.DT_INT32, types_pb2.DT_INT64,
    types_pb2.DT_UINT8, types_pb2.DT_UINT16, types_pb2.DT_UINT32, types_pb2.DT_UINT64,
    types_pb2.DT_BOOL])


class PlotError(Exception):
  """A problem with the command's input: `main` prints it on one line and exits with 2."""


@dataclasses.dataclass(frozen=True)
class EventFileScalars:
  """One scalar tag of one event file, with what the file says about itself."""
  path: str
  tags: frozenset        # Every scalar tag in the file.
  # Wall times (seconds since the epoch): of the first event of any kind (the writer's
  # file_version event, whole seconds), of the first summary, of the last event; inf, inf, -inf
  # for a file without them.
  first_wall_time: float
  first_summary_wall_time: float
  last_wall_time: float
  first_step: Optional[int]  # The smallest step of any summary in the file.
  steps: np.ndarray       # int64, of the requested tag, in file order.
  wall_times: np.ndarray  # Seconds since the epoch.
  values: np.ndarray      # float64.


@dataclasses.dataclass(frozen=True)
class Run:
  """One logdir's values of a scalar tag, merged over its event files and ordered by step."""
  logdir: str
  label: str
  tag: str
  steps: np.ndarray
  wall_times: np.ndarray
  values: np.ndarray
  start_time: float  # Wall time of the run's first event of any kind.
  identity: Optional[run_identity.Identity] = None  # None: the logdir has no run record.

  def x(self, axis: str = 'frames') -> np.ndarray:
    """The x of each value: environment frames, or minutes since the run's first event."""
    if axis == 'frames':
      return self.steps.astype(np.float64)
    if axis == 'time':
      return (self.wall_times - self.start_time) / 60.
    raise ValueError(f'unknown x axis {axis!r}; one of {sorted(X_AXES)}')


@dataclasses.dataclass(frozen=True)
class Curve:
  """The seeds of one group on a common x grid: their mean, minimum and maximum."""
  label: str
  x: np.ndarray
  mean: np.ndarray
  min: np.ndarray
  max: np.ndarray
  n_seeds: int
  identity: Optional[run_identity.Identity] = None  # Of every seed; None: no run record.

  @property
  def display_name(self) -> str:
    """The label, and the identity where the label does not say it."""
    if self.identity is None or self.identity.label == self.label:
      return self.label
    return f'{self.label} [{self.identity.label}]'


def find_event_files(logdir: str) -> list[str]:
  """Paths of the TensorBoard event files (`*tfevents*`) under `logdir`, at any depth, sorted."""
  found = []
  for root, _, files in os.walk(logdir):
    found.extend(os.path.join(root, name) for name in files if 'tfevents' in name)
  return sorted(found)


# What to do about a damaged file.
_REMEDY = 'restore it from a copy, or move it out of the logdir to plot without it'
# Bytes of a record besides its data: length (8), its CRC (4), the data's CRC (4).
_RECORD_OVERHEAD = 16


class _EventRecords:
  """The records of an event file, read by TensorBoard's own TensorFlow-free record reader,
  which checks the CRCs of every record's length and data.

  Iterating stops at the end of the file, or where it ends inside a record (a learner still
  writing it, or a copy cut short): `cut_at` is then that record's byte offset. A record that
  fails its CRC check raises `PlotError` naming the file (corrupt: nothing after it can be read).
  """

  def __init__(self, path: str):
    self.path = path
    self.count = 0  # Whole records read.
    self.offset = 0  # Byte offset of the next record.
    self.cut_at: Optional[int] = None

  def __iter__(self) -> Iterator[bytes]:
    try:
      reader = pywrap_tensorflow.PyRecordReader_New(self.path.encode())
    except tb_errors.NotFoundError as e:  # A link to nothing, or a file deleted since listed.
      raise PlotError(f'event file {self.path} is gone (a link to nothing?); {_REMEDY}') from e
    while True:
      try:
        reader.GetNext()
      except tb_errors.OutOfRangeError:
        return
      except tb_errors.DataLossError as e:
        if 'truncated record' in e.message:
          self.cut_at = self.offset
          return
        raise self.corrupt('fails its CRC check') from e
      record = reader.record()
      yield record
      self.count += 1
      self.offset += len(record) + _RECORD_OVERHEAD

  def corrupt(self, problem: str) -> PlotError:
    """The error for the record being read, which has `problem`."""
    return PlotError(f'corrupt event file {self.path}: record {self.count + 1} (at byte '
                     f'{self.offset}) {problem}; {_REMEDY}')


def _is_scalar(value) -> bool:
  """Whether a `Summary.Value` holds one number (TF1 `simple_value` or a TF2 scalar tensor)."""
  kind = value.WhichOneof('value')
  if kind == 'simple_value':
    return True
  if kind != 'tensor':
    return False
  plugin = value.metadata.plugin_data.plugin_name
  tensor = value.tensor
  return ((not plugin or plugin == 'scalars') and tensor.dtype in _NUMERIC_DTYPES
          and all(dim.size == 1 for dim in tensor.tensor_shape.dim))


def _number(value) -> float:
  """The number in a `Summary.Value` that `_is_scalar`."""
  if value.WhichOneof('value') == 'simple_value':
    return float(value.simple_value)
  return float(tensor_util.make_ndarray(value.tensor).reshape(-1)[0])


def read_scalars(path: str, tag: str) -> EventFileScalars:
  """Reads the values of scalar `tag` in the event file `path` (and the names of all its
  scalar tags).

  Values that are not finite (NaN, Inf: a diverged learner) are left out, with a warning that
  names the file; so is the end of a file cut off inside a record (see `_EventRecords`).

  Raises:
    PlotError: the file is corrupt (a record fails its CRC check or is not an event).
  """
  is_scalar = {}  # By tag: whether its first value held a number.
  steps, wall_times, values = [], [], []
  first_wall_time, first_summary_wall_time, last_wall_time = np.inf, np.inf, -np.inf
  first_step = None
  records = _EventRecords(path)
  for record in records:
    try:
      event = event_pb2.Event.FromString(record)
    except message.DecodeError as e:
      raise records.corrupt('is not a TensorBoard event') from e
    first_wall_time = min(first_wall_time, event.wall_time)
    last_wall_time = max(last_wall_time, event.wall_time)
    if not event.HasField('summary'):
      continue
    first_summary_wall_time = min(first_summary_wall_time, event.wall_time)
    first_step = event.step if first_step is None else min(first_step, event.step)
    for value in event.summary.value:
      if value.tag not in is_scalar:
        is_scalar[value.tag] = _is_scalar(value)
      if value.tag == tag and is_scalar[tag] and _is_scalar(value):
        steps.append(event.step)
        wall_times.append(event.wall_time)
        values.append(_number(value))
  tags = frozenset(name for name, scalar in is_scalar.items() if scalar)
  steps, wall_times, values = (np.array(steps, np.int64), np.array(wall_times, np.float64),
                               np.array(values, np.float64))
  _warn_if_incomplete(records, tag, steps)
  finite = np.isfinite(values)
  if not finite.all():
    _logger.warning('seed_rl.plot: warning: %s: %d of the %d values of %r are not finite (NaN '
                    'or Inf), the first at step %d; left out', path, np.sum(~finite),
                    values.size, tag, steps[~finite][0])
    steps, wall_times, values = steps[finite], wall_times[finite], values[finite]
  return EventFileScalars(path, tags, first_wall_time, first_summary_wall_time, last_wall_time,
                          first_step, steps, wall_times, values)


def _warn_if_incomplete(records: _EventRecords, tag: str, steps: np.ndarray) -> None:
  """Warns, naming the file, where it was empty or ended inside a record."""
  if records.cut_at is not None:
    read = f'up to step {steps.max()}' if steps.size else 'none'
    _logger.warning('seed_rl.plot: warning: %s ends inside a record at byte %d (a learner still '
                    'writing it, or a copy cut short); values of %r read before it: %s',
                    records.path, records.cut_at, tag, read)
  elif not records.count:
    _logger.warning('seed_rl.plot: warning: %s is empty', records.path)


def _merge_directory(files: Sequence[EventFileScalars]) -> tuple:
  """(steps, wall_times, values) of the event files of one directory, in the order written.

  A file whose summaries start after all earlier files ended is a restarted learner: it resumed
  from a checkpoint, so the earlier files' values at and after its first step are superseded
  and dropped (as TensorBoard does). Files written at the same time are kept whole.
  """
  steps, wall_times, values = np.zeros([0], np.int64), np.zeros([0]), np.zeros([0])
  ended = -np.inf
  for f in sorted(files, key=lambda f: (f.first_summary_wall_time, f.path)):
    if f.first_step is not None and f.first_summary_wall_time >= ended:
      keep = steps < f.first_step
      steps, wall_times, values = steps[keep], wall_times[keep], values[keep]
    steps = np.concatenate([steps, f.steps])
    wall_times = np.concatenate([wall_times, f.wall_times])
    values = np.concatenate([values, f.values])
    ended = max(ended, f.last_wall_time)
  return steps, wall_times, values


def merge_event_files(files: Sequence[EventFileScalars]) -> tuple:
  """(steps, wall_times, values) of several event files of one logdir, ordered by step.

  Restarts supersede earlier values within a directory (see `_merge_directory`); the files of
  different directories (other runs under the logdir) are merged whole.
  """
  directories = {}
  for f in files:
    directories.setdefault(os.path.dirname(f.path), []).append(f)
  parts = [_merge_directory(directories[name]) for name in sorted(directories)]
  steps, wall_times, values = (np.concatenate(column) for column in zip(*parts))
  order = np.argsort(steps, kind='stable')
  return steps[order], wall_times[order], values[order]


def _labels(logdirs: Sequence[str], label_by: str,
            identities: Sequence[Optional[run_identity.Identity]]) -> list[str]:
  """Group label of each logdir: its identity's label (its parent directory's name where it has
  no run record), its parent directory's name, or its own name (the path as given where two
  logdirs share a name)."""
  paths = [os.path.abspath(logdir) for logdir in logdirs]
  parents = [os.path.basename(os.path.dirname(p)) or os.path.basename(p) or p for p in paths]
  if label_by == 'identity':
    return [identity.label if identity else parent
            for identity, parent in zip(identities, parents)]
  if label_by == 'parent':
    return parents
  names = [os.path.basename(p) or p for p in paths]
  return [name if names.count(name) == 1 else os.path.normpath(logdir)
          for name, logdir in zip(names, logdirs)]


def _check_logdir(logdir: str) -> list[str]:
  if not os.path.isdir(logdir):
    what = 'is not a directory' if os.path.exists(logdir) else 'does not exist'
    raise PlotError(f'logdir {logdir} {what}')
  paths = find_event_files(logdir)
  if not paths:
    raise PlotError(f'no TensorBoard event files (events.out.tfevents.*) under {logdir}')
  return paths


def _run_logdirs(logdir: str, event_files: Sequence[str]) -> dict[str, list[str]]:
  """The runs of `logdir` with their event files: itself, or, where it is a parent of run
  logdirs (no event file and no run record directly, run logdirs below it), each of them.

  Raises `PlotError` for event files under such a parent outside its run logdirs (runs without
  a record beside runs with one, which it cannot tell apart); a run logdir without event files
  (a learner that never logged) is skipped with a warning. Without run records below, the event
  files of all its subdirectories are one run, as ever, with a warning where there are several.
  """
  if (run_identity.has_record(logdir) or
      any(os.path.dirname(path) == logdir for path in event_files)):
    return {logdir: list(event_files)}
  runs = run_identity.find_run_logdirs(logdir)
  if not runs:
    directories = {os.path.dirname(path) for path in event_files}
    if len(directories) > 1:
      _logger.warning('seed_rl.plot: warning: the event files of %d directories under %s are '
                      'merged into one run (no run record tells whether they are several); '
                      'name them to plot each as a run', len(directories), logdir)
    return {logdir: list(event_files)}
  by_run = {run: [] for run in runs}
  for path in event_files:
    owner = next((run for run in runs if path.startswith(run + os.sep)), None)
    if owner is None:
      raise PlotError(
          f'{os.path.dirname(path)} holds event files but no run record '
          f'({run_identity.RUNS_FILE}), unlike the run logdirs beside it under {logdir}: '
          f'name the logdirs to plot instead of {logdir}')
    by_run[owner].append(path)
  for run in runs:
    if not by_run[run]:
      _logger.warning('seed_rl.plot: warning: %s has no event files; skipped', run)
  return {run: paths for run, paths in by_run.items() if paths}


def _read_record(logdir: str) -> Optional[run_identity.RunRecord]:
  try:
    return run_identity.read_record(logdir)
  except run_identity.RecordError as e:
    raise PlotError(f'{e}; {_REMEDY}') from e


def load_runs(logdirs: Sequence[str], tag: str = DEFAULT_TAG,
              label_by: str = 'identity') -> list[Run]:
  """Scalar `tag` of each run logdir (duplicates dropped) as one `Run`, with its identity (from
  its run record) and labelled by `label_by` (see `_labels`). A parent of run logdirs stands
  for each of them (see `_run_logdirs`).

  Raises `PlotError` for a logdir that does not exist or holds no event file, a corrupt event
  file, a run record that cannot be read, and when no logdir has `tag` (listing the scalar tags
  found); a logdir without it is skipped with a warning.
  """
  if label_by not in LABEL_BY:
    raise ValueError(f'unknown label_by {label_by!r}; one of {LABEL_BY}')
  given = list(dict.fromkeys(os.path.normpath(logdir) for logdir in logdirs))
  event_files = {}
  for logdir, paths in zip(given, [_check_logdir(logdir) for logdir in given]):
    for run, run_paths in _run_logdirs(logdir, paths).items():
      event_files.setdefault(run, run_paths)
  loaded, without_tag, found_tags = [], [], set()
  for logdir, paths in event_files.items():
    files = [read_scalars(path, tag) for path in paths]
    found_tags.update(*(f.tags for f in files))
    steps, wall_times, values = merge_event_files(files)
    if not steps.size:
      without_tag.append(logdir)
      continue
    start_time = min(f.first_wall_time for f in files)
    loaded.append((logdir, steps, wall_times, values, start_time))
  if not loaded:
    found = ', '.join(sorted(found_tags)) or 'none'
    raise PlotError(f'no run has the scalar tag {tag!r}; tags found: {found}')
  for logdir in without_tag:
    _logger.warning('seed_rl.plot: warning: %s has no scalar %r; skipped', logdir, tag)
  run_logdirs = [logdir for logdir, *_ in loaded]
  identities = run_identity.identities([_read_record(logdir) for logdir in run_logdirs])
  labels = _labels(run_logdirs, label_by, identities)
  return [Run(logdir, label, tag, steps, wall_times, values, start_time, identity)
          for (logdir, steps, wall_times, values, start_time), label, identity
          in zip(loaded, labels, identities)]


def group_runs(runs: Sequence[Run]) -> dict[str, list[Run]]:
  """Runs by label, in the order the labels first appear."""
  groups = {}
  for run in runs:
    groups.setdefault(run.label, []).append(run)
  return groups


def _check_one_setup(label: str, runs: Sequence[Run]) -> None:
  """Raises `PlotError` where the runs of one group are not known to be seeds of one setup:
  their identities differ, or some have a run record and others none."""
  first_of = {}  # Identity -> the first run's logdir.
  for run in runs:
    first_of.setdefault(run.identity, run.logdir)
  if len(first_of) > 1:
    named = ', '.join(f'{logdir} ({identity.label if identity else "no run record"})'
                      for identity, logdir in first_of.items())
    raise PlotError(
        f'group {label!r} would average runs not known to be seeds of one setup: {named}; '
        'plot them grouped by what they ran (without --label_by), each alone (--label_by '
        'name), or with separate commands')


def smooth(values: np.ndarray, n: int) -> np.ndarray:
  """Trailing moving average over `n` points (the first n-1 points average what precedes)."""
  values = np.asarray(values, np.float64)
  if n <= 1 or not values.size:
    return values
  sums = np.concatenate([[0.], np.cumsum(values)])
  end = np.arange(1, values.size + 1)
  start = np.maximum(end - n, 0)
  return (sums[end] - sums[start]) / (end - start)


def _unique_x(x: np.ndarray, y: np.ndarray) -> tuple:
  """Sorted distinct x with the mean y of the points that share one (an interpolable line)."""
  order = np.argsort(x, kind='stable')
  x, y = x[order], y[order]
  unique, first = np.unique(x, return_index=True)
  counts = np.diff(np.append(first, x.size))
  return unique, np.add.reduceat(y, first) / counts


def group_curve(label: str, runs: Sequence[Run], x: str = 'frames', smoothing: int = 1,
                points: Optional[int] = None) -> Curve:
  """Mean, min and max of `runs` (seeds) on a common grid over the x range all of them cover.

  Each run is smoothed (`smooth`, over its points in step order) and then interpolated
  linearly. The grid is every x of any seed in that range, or `points` evenly spaced ones.
  Raises `PlotError` where the runs are not known to be seeds of one setup (their recorded
  identities differ, or some have a run record and others none).
  """
  _check_one_setup(label, runs)
  lines = [_unique_x(run.x(x), smooth(run.values, smoothing)) for run in runs]
  low, high = max(xs[0] for xs, _ in lines), min(xs[-1] for xs, _ in lines)
  if low > high:
    raise PlotError(f'the {len(runs)} runs of group {label!r} have no {X_AXES[x]} in common')
  if points:
    grid = np.unique(np.linspace(low, high, points))
  else:
    grid = np.unique(np.concatenate([xs[(xs >= low) & (xs <= high)] for xs, _ in lines]))
  ys = np.stack([np.interp(grid, xs, ys) for xs, ys in lines])
  return Curve(label, grid, ys.mean(axis=0), ys.min(axis=0), ys.max(axis=0), len(runs),
               runs[0].identity)


def curves(runs: Sequence[Run], x: str = 'frames', smoothing: int = 1,
           points: Optional[int] = None) -> list[Curve]:
  """One `Curve` per label of `runs` (see `group_curve`)."""
  if x not in X_AXES:
    raise ValueError(f'unknown x axis {x!r}; one of {sorted(X_AXES)}')
  return [group_curve(label, members, x, smoothing, points)
          for label, members in group_runs(runs).items()]


def _format(number: float) -> str:
  """A CSV number: integral values without a fraction, others exactly (shortest repr)."""
  number = float(number)
  return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def _identity_columns(identity: Optional[run_identity.Identity]) -> list[str]:
  """env, agent, entry_point and the differing flags (space-separated); empty without a record."""
  if identity is None:
    return ['', '', '', '']
  return [identity.env or '', identity.agent or '', identity.entry_point or '',
          ' '.join(identity.flags)]


def write_csv(curves_: Sequence[Curve], path: str) -> None:
  """Writes the curves as rows of `CSV_COLUMNS`: group, x, mean, min, max, n_seeds and the
  group's identity."""
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(CSV_COLUMNS)
    for curve in curves_:
      identity = _identity_columns(curve.identity)
      for row in zip(curve.x, curve.mean, curve.min, curve.max):
        writer.writerow([curve.label, *map(_format, row), curve.n_seeds, *identity])


def _seeds(n: int) -> str:
  return f'{n} seed' if n == 1 else f'{n} seeds'


NO_RECORD_PANEL = 'runs without a run record'
NO_ENV_PANEL = 'environment not recorded'


def _panel_key(curve: Curve) -> tuple[bool, Optional[str]]:
  """(whether the curve has a run record, the environment it names or None)."""
  return (curve.identity is not None, curve.identity.env if curve.identity else None)


def _panel_title(key: tuple[bool, Optional[str]]) -> str:
  """The environment, else why there is none: no run record (older learners), or a record
  that names none (no `learner_flags.txt`, or an entry point without --env_name or --game)."""
  has_record, env = key
  return env or (NO_ENV_PANEL if has_record else NO_RECORD_PANEL)


def _panels(curves_: Sequence[Curve]) -> dict[tuple[bool, Optional[str]], list[Curve]]:
  """Curves by `_panel_key`, in the order they first appear: returns of different environments
  are on different scales."""
  panels = {}
  for curve in curves_:
    panels.setdefault(_panel_key(curve), []).append(curve)
  return panels


def plot_curves(curves_: Sequence[Curve], path: str, x: str = 'frames',
                tag: str = DEFAULT_TAG, title: Optional[str] = None,
                size: tuple = (8., 5.), dpi: int = 100) -> 'Figure':
  """Draws each curve's mean and its min-max band over seeds into an image file (PNG unless the
  suffix names another format matplotlib writes), without a display (Agg canvas); returns the
  figure.

  Each environment gets a panel of `size` titled by its name (up to 3 side by side); curves
  without a run record share one, and so do those whose record names no environment. `title` titles the figure.
  """
  # Imported here: the summary and CSV need no matplotlib, and no pyplot state is touched.
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure
  panels = _panels(curves_)
  columns = min(len(panels), 3)
  rows = -(-len(panels) // columns)
  figure = Figure(figsize=(size[0] * columns, size[1] * rows), dpi=dpi, layout='constrained')
  FigureCanvasAgg(figure)
  grid = figure.subplots(rows, columns, squeeze=False).ravel()
  for unused in grid[len(panels):]:
    figure.delaxes(unused)
  for axes, (key, members) in zip(grid, panels.items()):
    for curve in members:
      (line,) = axes.plot(curve.x, curve.mean, marker='o' if curve.x.size == 1 else None,
                          label=f'{curve.display_name} ({_seeds(curve.n_seeds)})')
      if curve.n_seeds > 1:
        axes.fill_between(curve.x, curve.min, curve.max, color=line.get_color(), alpha=0.25,
                          linewidth=0)
    axes.set_xlabel(X_AXES[x])
    axes.set_ylabel(tag)
    env = key[1]
    if len(panels) > 1:
      axes.set_title(_panel_title(key))
    elif title or env:
      axes.set_title(title or env)
    axes.grid(alpha=0.3)
    axes.legend()
  if title and len(panels) > 1:
    figure.suptitle(title)
  figure.savefig(path)
  return figure


def format_summary(curves_: Sequence[Curve], x: str = 'frames', tag: str = DEFAULT_TAG) -> str:
  """Per group (with its identity): seeds, the last and the best (highest) mean with their x."""
  unit = X_AXES[x]
  lines = [f'{tag}, mean over seeds, by {unit}:']
  for curve in curves_:
    finite = np.flatnonzero(np.isfinite(curve.mean))  # A diverged run logs NaN.
    best = int(finite[np.argmax(curve.mean[finite])]) if finite.size else curve.mean.size - 1
    lines.append(f'{curve.display_name}: {_seeds(curve.n_seeds)}, '
                 f'last mean {curve.mean[-1]:.6g} at {curve.x[-1]:.6g} {unit}, '
                 f'best mean {curve.mean[best]:.6g} at {curve.x[best]:.6g} {unit}')
  return '\n'.join(lines)


def _positive_int(text: str) -> int:
  number = int(text)
  if number < 1:
    raise argparse.ArgumentTypeError(f'must be at least 1: {text}')
  return number


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='python -m seed_rl.plot', description=__doc__.split('\n')[0])
  parser.add_argument('logdirs', nargs='+', metavar='LOGDIR',
                      help='learner logdirs (event files are found at any depth), or parents '
                           'of run logdirs')
  parser.add_argument('--out', help='image to write (PNG)')
  parser.add_argument('--csv', help='CSV to write: ' + ', '.join(CSV_COLUMNS))
  parser.add_argument('--x', choices=sorted(X_AXES), default='frames',
                      help='environment frames, or minutes since the run\'s first event')
  parser.add_argument('--tag', default=DEFAULT_TAG,
                      help='scalar tag (default %(default)s); values that are not finite (NaN, '
                           'Inf) are left out of the plot and the CSV, with a warning naming '
                           'the event file')
  parser.add_argument('--smoothing', type=_positive_int, default=1, metavar='N',
                      help='moving average over N points of each run (default 1: none)')
  parser.add_argument('--label_by', choices=LABEL_BY, default='identity',
                      help='group runs by what they ran (identity: environment, agent, entry '
                           'point, differing flags; logdirs without a run record by parent), '
                           'by parent directory name, or plot each logdir alone (name)')
  parser.add_argument('--points', type=_positive_int, metavar='N',
                      help='resample each group to N evenly spaced x (default: every x of '
                           'any seed)')
  parser.add_argument('--title', help='title of the plot')
  return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Command line entry point; returns the exit status (2: bad input, one line on stderr)."""
  args = _parser().parse_args(argv)
  try:
    results = curves(load_runs(args.logdirs, args.tag, args.label_by), args.x, args.smoothing,
                     args.points)
    if args.csv:
      write_csv(results, args.csv)
      print(f'wrote {args.csv}')
    if args.out:
      plot_curves(results, args.out, args.x, args.tag, args.title)
      print(f'wrote {args.out}')
  except (PlotError, OSError) as e:
    print(f'seed_rl.plot: error: {e}', file=sys.stderr)
    return 2
  if not (args.csv or args.out):
    print(format_summary(results, args.x, args.tag))
  return 0


if __name__ == '__main__':
  sys.exit(main())
