"""`python -m seed_rl.plot` on damaged runs: event files written by tf.summary, then cut short,
corrupted, emptied or holding values that are not finite, and run records that are damaged.

A corrupt file is an error naming it (exit status 2), never "no run has the tag"; a file cut
off inside a record and values that are not finite are warnings naming the file, and what is
left of the file is plotted.
"""

import csv
import os
import pathlib
import struct
import subprocess
import sys

import pytest
import tensorflow as tf

pytestmark = pytest.mark.timeout(120)

ROOT = pathlib.Path(__file__).resolve().parents[1]
POINTS = [(step, float(step) / 100) for step in range(0, 1000, 100)]
REMEDY = 'restore it from a copy, or move it out of the logdir to plot without it'


def _write(logdir: pathlib.Path, points) -> pathlib.Path:
  """One learner's event file of `episode_return` at `points`; returns its path."""
  writer = tf.summary.create_file_writer(str(logdir))
  with writer.as_default():
    for step, value in points:
      tf.summary.scalar('episode_return', value, step=step)
  writer.close()
  (path,) = logdir.glob('events.out.tfevents.*')
  return path


def _record_offsets(path: pathlib.Path) -> list:
  """The byte offset of each record of a TFRecord file (8 bytes of length, its CRC, the data,
  the data's CRC)."""
  data = path.read_bytes()
  offsets, offset = [], 0
  while offset < len(data):
    offsets.append(offset)
    (length,) = struct.unpack('<Q', data[offset:offset + 8])
    offset += 16 + length
  return offsets


def _cli(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, '-m', 'seed_rl.plot', *map(str, args)], cwd=ROOT,
                        capture_output=True, text=True, timeout=100,
                        env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _csv_points(path) -> list:
  with open(path, newline='') as f:
    return [(float(row['x']), float(row['mean'])) for row in csv.DictReader(f)]


def test_values_that_are_not_finite_are_left_out_with_a_warning_naming_the_file(tmp_path):
  path = _write(tmp_path / 'run', [(0, 1.), (100, float('nan')), (200, float('inf')),
                                   (300, float('-inf')), (400, 5.)])
  result = _cli(tmp_path / 'run', '--csv', tmp_path / 'curves.csv')
  assert result.returncode == 0, result.stderr
  assert result.stderr.splitlines() == [
      f"seed_rl.plot: warning: {path}: 3 of the 5 values of 'episode_return' are not finite "
      '(NaN or Inf), the first at step 100; left out']
  assert _csv_points(tmp_path / 'curves.csv') == [(0., 1.), (400., 5.)]
  assert 'left out of the plot and the CSV' in ' '.join(_cli('--help').stdout.split())


def test_a_file_cut_off_inside_a_record_is_plotted_up_to_there_with_a_warning(tmp_path):
  """A copy cut short in the middle: the whole records before the cut are plotted."""
  path = _write(tmp_path / 'run', POINTS)
  offsets = _record_offsets(path)
  cut_record = len(offsets) // 2
  os.truncate(path, offsets[cut_record] + 10)
  result = _cli(tmp_path / 'run', '--csv', tmp_path / 'curves.csv')
  assert result.returncode == 0, result.stderr
  points = _csv_points(tmp_path / 'curves.csv')
  # The file's first record is the writer's file_version event; one value per record after it.
  assert points == [(float(step), value) for step, value in POINTS[:cut_record - 1]]
  assert result.stderr.splitlines() == [
      f'seed_rl.plot: warning: {path} ends inside a record at byte {offsets[cut_record]} (a '
      'learner still writing it, or a copy cut short); values of \'episode_return\' read '
      f'before it: up to step {POINTS[cut_record - 2][0]}']


def _flip_byte(path: pathlib.Path, at: int) -> None:
  data = bytearray(path.read_bytes())
  data[at] ^= 0xff
  path.write_bytes(bytes(data))


def test_a_corrupt_record_is_an_error_naming_the_file(tmp_path):
  """A byte flipped in the middle: its record fails its CRC check (the values after it cannot
  be read); not plotted in part."""
  path = _write(tmp_path / 'run', POINTS)
  _write(tmp_path / 'other', POINTS)
  offsets = _record_offsets(path)
  _flip_byte(path, offsets[5] + 20)
  result = _cli(tmp_path / 'run', tmp_path / 'other', '--csv', tmp_path / 'curves.csv')
  assert result.returncode == 2
  assert result.stderr.splitlines() == [
      f'seed_rl.plot: error: corrupt event file {path}: record 6 (at byte {offsets[5]}) fails '
      f'its CRC check; {REMEDY}']
  assert not (tmp_path / 'curves.csv').exists()


@pytest.mark.parametrize('kind', ['not_an_event_file', 'records_not_events'])
def test_a_file_that_is_corrupt_from_the_start_is_not_a_missing_tag(tmp_path, kind):
  (tmp_path / 'run').mkdir()
  path = tmp_path / 'run' / 'events.out.tfevents.1700000000.host.1.v2'
  if kind == 'not_an_event_file':
    path.write_text('a learner log, not an event file\n' * 4)
    problem = 'fails its CRC check'
  else:  # Records whose CRCs hold, but whose data are no Event protos.
    with tf.io.TFRecordWriter(str(path)) as writer:
      writer.write(b'\xff\xff\xff')
    problem = 'is not a TensorBoard event'
  result = _cli(tmp_path / 'run')
  assert result.returncode == 2
  assert result.stderr.splitlines() == [
      f'seed_rl.plot: error: corrupt event file {path}: record 1 (at byte 0) {problem}; '
      f'{REMEDY}']


def test_an_empty_event_file_is_named_in_a_warning(tmp_path):
  _write(tmp_path / 'run', POINTS)
  empty = tmp_path / 'run' / 'events.out.tfevents.1.host.2.v2'
  empty.write_bytes(b'')
  result = _cli(tmp_path / 'run')
  assert result.returncode == 0, result.stderr
  assert result.stderr.splitlines() == [f'seed_rl.plot: warning: {empty} is empty']


@pytest.mark.parametrize('name, content, problem', [
    ('runs.jsonl', b'{"agent": "VTRACE"}\n\xff\xfe\n',
     'is not UTF-8 text (byte 0xff at offset 20), so it is damaged'),
    ('learner_flags.txt', b'--env_name=CartPole-v1\n\x80\n',
     'is not UTF-8 text (byte 0x80 at offset 23), so it is damaged'),
    ('runs.jsonl', b'{"agent": 3}\n', ': its last line has agent 3, not a string, so it is '
     'damaged'),
    ('runs.jsonl', None, 'is a directory, not a file'),
])
def test_a_damaged_run_record_is_an_error_naming_it(tmp_path, name, content, problem):
  _write(tmp_path / 'run', POINTS)
  path = tmp_path / 'run' / name
  if content is None:
    path.mkdir()
  else:
    path.write_bytes(content)
  result = _cli(tmp_path / 'run')
  assert result.returncode == 2, result.stderr
  separator = '' if problem.startswith(':') else ' '
  assert result.stderr.splitlines() == [
      f'seed_rl.plot: error: {path}{separator}{problem}; {REMEDY}']


def test_an_event_file_that_is_a_link_to_nothing_is_named(tmp_path):
  _write(tmp_path / 'run', POINTS)
  link = tmp_path / 'run' / 'events.out.tfevents.1.host.2.v2'
  link.symlink_to(tmp_path / 'moved_away')
  result = _cli(tmp_path / 'run')
  assert result.returncode == 2, result.stderr
  assert result.stderr.splitlines() == [
      f'seed_rl.plot: error: event file {link} is gone (a link to nothing?); {REMEDY}']
