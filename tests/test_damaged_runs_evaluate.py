"""`python -m seed_rl.evaluate` on damaged logdirs: one error line naming the file, exit status 2.

Each case damages a copy of one real, untrained CartPole run (its run record and the real
export of a tiny policy, `evaluate_helpers.write_cartpole_run`) the way a disk that filled up, a
copy cut short or a hand edit does, and runs the CLI on it in a process of its own.
"""

import concurrent.futures
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests import evaluate_helpers
from tests.processes import ROOT

pytestmark = pytest.mark.timeout(240)

DATA = 'saved_model/variables/variables.data-00000-of-00001'
INDEX = 'saved_model/variables/variables.index'
GRAPH = 'saved_model/saved_model.pb'
EXPORT_AGAIN = ('so the exported policy is damaged: restore saved_model/ from a copy, or export '
                'it again: run the learner on this logdir once more with the flags it trained '
                'with ({logdir}/learner_flags.txt)')
INSTEAD_OF_RUNS = ('restore it from a copy, or move it out of the logdir and pass '
                   '--entry_point=MODULE --create_env_fn=MODULE:FUNCTION instead.')
INSTEAD_OF_FLAGS = ('restore it from a copy, or move it out of the logdir and pass '
                    '--entry_point=MODULE --create_env_fn=MODULE:FUNCTION and the learner\'s '
                    'flags as --flag=value')
PROCESSES_AT_ONCE = 4


def _write(data):
  def damage(path):
    if path.is_dir():
      shutil.rmtree(path)
    (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)
  return damage


def _truncate(fraction):
  return lambda path: os.truncate(path, int(os.path.getsize(path) * fraction))


def _flip_byte(at):
  def damage(path):
    with open(path, 'r+b') as f:
      f.seek(at)
      byte = f.read(1)
      f.seek(at)
      f.write(bytes([byte[0] ^ 0xff]))
  return damage


def _remove(path):
  os.remove(path)


def _replace_by_directory(path):
  os.remove(path)
  path.mkdir()


def _replace_by_a_link_to_nothing(path):
  os.remove(path)
  path.symlink_to(path.with_name('moved_away'))


def _replace_by_file(path):
  shutil.rmtree(path)
  path.write_text('not a directory\n')


def _runs_line(**fields):
  record = {'entry_point': 'seed_rl.environments.gym.vtrace_main', 'agent': 'VTRACE',
            'create_env_fn': 'seed_rl.environments.gym.env:create_environment'}
  return json.dumps(dict(record, **fields)) + '\n'


# name: (the file damaged, how, the error's text with {path} (that file) and {logdir}).
DAMAGED = {
    'empty_data': (DATA, _write(b''), '{path} is empty (0 bytes), ' + EXPORT_AGAIN),
    'cut_short_data': (DATA, _truncate(0.5),
                       '{path} is shorter than its index says (cut short), ' + EXPORT_AGAIN),
    'flipped_byte_in_data': (DATA, _flip_byte(40), '{path} does not read back (TensorBundle '),
    'deleted_index': (INDEX, _remove, '{path} is missing, ' + EXPORT_AGAIN),
    'garbage_index': (INDEX, _write(b'\x00garbage' * 30),
                      '{path} cannot be read (not an sstable (bad magic number)), ' + EXPORT_AGAIN),
    'cut_short_graph': (GRAPH, _truncate(0.3), "{path} cannot be parsed (Error parsing message "
                        "with type 'tensorflow.SavedModel'"),
    'empty_graph': (GRAPH, _write(b''), '{path} is empty (0 bytes), ' + EXPORT_AGAIN),
    'graph_is_a_link_to_nothing': (GRAPH, _replace_by_a_link_to_nothing,
                                   '{path} is missing, ' + EXPORT_AGAIN),
    'graph_is_a_directory': (GRAPH, _replace_by_directory,
                             '{path} is a directory, not a file, ' + EXPORT_AGAIN),
    'saved_model_is_a_file': ('saved_model', _replace_by_file,
                              '{path} is not a directory, ' + EXPORT_AGAIN),
    'runs_not_utf8': ('runs.jsonl', _write(b'\xff\xfe{"agent": "VTRACE"}\n'),
                      '{path} is not UTF-8 text (byte 0xff at offset 0), so it is damaged: '
                      + INSTEAD_OF_RUNS),
    'runs_last_line_not_json': ('runs.jsonl', _write(_runs_line() + '{"entry_point": "seed_r'),
                                '{path}: its last line is not JSON (Unterminated string '
                                'starting at: line 1 column 17 (char 16)): ' + INSTEAD_OF_RUNS),
    'runs_last_line_of_the_wrong_shape': (
        'runs.jsonl', _write(_runs_line(create_env_fn=['seed_rl.environments.gym.env'])),
        '{path}: its last line has create_env_fn ["seed_rl.environments.gym.env"], not a '
        'string, so it is damaged: ' + INSTEAD_OF_RUNS),
    'empty_runs': ('runs.jsonl', _write(''), '{path} is empty (learners write it when they '
                   'start), so it is damaged: ' + INSTEAD_OF_RUNS),
    'runs_is_a_directory': ('runs.jsonl', _replace_by_directory,
                            '{path} is a directory, not a file: ' + INSTEAD_OF_RUNS),
    'flags_not_utf8': ('learner_flags.txt', _write(b'--env_name=CartPole-v1\n\x80\x81\n'),
                       '{path} is not UTF-8 text (byte 0x80 at offset 23), so it is damaged: '
                       + INSTEAD_OF_FLAGS),
    'empty_flags': ('learner_flags.txt', _write(''), '{path} is empty (learners write it when '
                    'they start), so it is damaged: ' + INSTEAD_OF_FLAGS),
    'flags_line_with_a_bad_value': (
        'learner_flags.txt', _write('--env_name=CartPole-v1\n--num_envs=zz\n'),
        "Invalid flags for seed_rl.environments.gym.vtrace_main: flag --num_envs=zz: invalid "
        "literal for int() with base 10: 'zz'; that line is in the learner's learner_flags.txt: "
        'fix it there, or restore the file from a copy.'),
    'flags_is_a_directory': ('learner_flags.txt', _replace_by_directory,
                             '{path} is a directory, not a file: ' + INSTEAD_OF_FLAGS),
}
# Logdirs that are not runs: name: (the --logdir under the test's directory, the error).
NOT_RUNS = {
    'missing': ('nowhere', 'logdir {logdir} does not exist: pass a learner\'s --logdir.'),
    'a_file': ('a_file', 'logdir {logdir} is not a directory: pass a learner\'s --logdir.'),
    'a_parent_of_runs': ('runs', '{logdir} is not a run but holds runs ({logdir}/seed1, '
                         '{logdir}/seed2): pass one of them as --logdir.'),
    'an_export': ('runs/seed1/saved_model', '{logdir} is an exported policy, not a logdir: pass '
                  'the logdir that holds it, --logdir={parent}.'),
}


def _evaluate(*arguments):
  """`(returncode, stdout, stderr)` of the CLI."""
  result = subprocess.run(
      [sys.executable, '-m', 'seed_rl.evaluate', '--episodes=1', *arguments], cwd=ROOT,
      capture_output=True, text=True, timeout=180,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=str(ROOT)))
  return result.returncode, result.stdout, result.stderr


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """An untrained CartPole run, which evaluates."""
  return evaluate_helpers.write_cartpole_run(tmp_path_factory.mktemp('run'))


@pytest.fixture(scope='module')
def results(run, tmp_path_factory):
  """The CLI's `(returncode, stdout, stderr)` by case: the undamaged run ('undamaged'), each
  of `DAMAGED` on a copy of it, each of `NOT_RUNS`, and a copy whose damaged runs.jsonl was
  moved away as the error says, with the flags it names ('runs_moved_away')."""
  root = tmp_path_factory.mktemp('damaged')
  arguments = {'undamaged': [f'--logdir={run}']}
  for name, (damaged, damage, _) in DAMAGED.items():
    shutil.copytree(run, root / name)
    damage(root / name / damaged)
    arguments[name] = [f'--logdir={root / name}']
  shutil.copytree(run, root / 'runs_moved_away')
  (root / 'runs_moved_away' / 'runs.jsonl').rename(root / 'runs.jsonl.damaged')
  arguments['runs_moved_away'] = [
      f'--logdir={root / "runs_moved_away"}',
      '--entry_point=seed_rl.environments.gym.vtrace_main',
      '--create_env_fn=seed_rl.environments.gym.env:create_environment']
  (root / 'a_file').write_text('not a logdir\n')
  for seed in ('seed1', 'seed2'):
    shutil.copytree(run, root / 'runs' / seed)
  for name, (logdir, _) in NOT_RUNS.items():
    arguments[name] = [f'--logdir={root / logdir}']
  with concurrent.futures.ThreadPoolExecutor(PROCESSES_AT_ONCE) as pool:
    done = {name: pool.submit(_evaluate, *args) for name, args in arguments.items()}
  return {'root': root, **{name: future.result() for name, future in done.items()}}


def _error_line(result):
  """The CLI's one error line, after checking its exit status and that it shows no traceback."""
  returncode, stdout, stderr = result
  assert returncode == 2, (returncode, stdout[-2000:], stderr[-3000:])
  assert 'Traceback' not in stderr, stderr[-3000:]
  lines = [line for line in stderr.splitlines() if line.startswith('seed_rl.evaluate: error: ')]
  assert len(lines) == 1, stderr[-3000:]
  return lines[0][len('seed_rl.evaluate: error: '):]


def test_the_undamaged_run_and_a_run_whose_record_was_moved_away_evaluate(results):
  for name in ('undamaged', 'runs_moved_away'):
    returncode, stdout, stderr = results[name]
    assert returncode == 0, (name, stderr[-3000:])
    assert '1 episodes of CartPole-v1' in stdout, stdout


@pytest.mark.parametrize('case', sorted(DAMAGED))
def test_a_damaged_file_is_named_in_one_error_line(results, case):
  damaged, _, expected = DAMAGED[case]
  logdir = results['root'] / case
  line = _error_line(results[case])
  assert expected.format(path=logdir / damaged, logdir=logdir) in line, line
  assert 'different device' not in line  # TensorFlow's hint for a missing file does not apply.


@pytest.mark.parametrize('case', sorted(NOT_RUNS))
def test_a_logdir_that_is_not_a_run_is_named_with_what_to_pass(results, case):
  logdir, expected = NOT_RUNS[case]
  path = pathlib.Path(results['root'] / logdir)
  assert _error_line(results[case]) == expected.format(logdir=path, parent=path.parent)


def test_remote_files_are_checked_alike(run):
  """Through TensorFlow's file system, as for gs:// (its in-memory ram:// here)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed_rl import evaluation_files  # pylint: disable=g-import-not-at-top
  remote = 'ram://damaged_runs/run'
  for path in run.rglob('*'):
    target = f'{remote}/{path.relative_to(run)}'
    if path.is_dir():
      tf.io.gfile.makedirs(target)
    else:
      tf.io.gfile.copy(str(path), target, overwrite=True)
  evaluation_files.check_saved_model_files(f'{remote}/saved_model')
  tf.io.gfile.remove(f'{remote}/{INDEX}')
  with pytest.raises(evaluation_files.EvaluateError) as error:
    evaluation_files.check_saved_model_files(f'{remote}/saved_model')
  assert str(error.value).startswith(f'{remote}/{INDEX} is missing, ' +
                                     EXPORT_AGAIN.format(logdir=remote))
  tf.io.gfile.remove(f'{remote}/runs.jsonl')  # ram:// appends to a file written again.
  with tf.io.gfile.GFile(f'{remote}/runs.jsonl', 'wb') as f:
    f.write(b'\xff\n')
  for path, problem in [('runs.jsonl', 'is not UTF-8 text (byte 0xff at offset 0), so it is '
                         'damaged'), ('saved_model', 'is a directory, not a file'),
                        ('gone.txt', 'cannot be read (NotFoundError)')]:
    with pytest.raises(evaluation_files.EvaluateError) as error:
      evaluation_files.read_record_file(f'{remote}/{path}', 'do this.')
    assert str(error.value) == f'{remote}/{path} {problem}: do this.'
