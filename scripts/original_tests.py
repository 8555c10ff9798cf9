"""Runs the original SEED RL's unit tests against this checkout's seed_rl, and summarizes them.

    python scripts/original_tests.py ORIGINAL [--out DIR] [--fix-libraries] [-- PYTEST_ARGS]

ORIGINAL is the original repository (google-research/seed_rl), as a bare git directory (its
HEAD is read) or as a checkout. Its `*_test.py` files are copied into DIR (a new temporary
directory by default, removed afterwards), keeping their paths, with the import paths of this
repository: `seed_rl.atari`, `seed_rl.dmlab`, `seed_rl.football` and `seed_rl.mujoco` become
`seed_rl.environments.*`, the gRPC ops module becomes `seed_rl.grpc`, and
`tf.enable_v2_behavior()` (gone from TensorFlow 2) is dropped. A test-support module that the
tests import (a module of the original named like `test_utils`) comes from this checkout where
it has one, else the original's is copied next to the tests and imported from there.

`--fix-libraries` also applies LIBRARY_FIXES: the tests' own calls of library APIs removed
since they were written (numpy's `bool8`, Keras 2's optimizer `minimize`, gym's 4-value
`step`, ...), so that a run with and a run without the fixes tell apart the failures that are
the tests' own from those of seed_rl.

pytest runs each test file in a process of its own (as each of the original's test binaries
ran), with this checkout first on PYTHONPATH, absl's flags marked parsed (as the tests'
`tf.test.main()` did) and a junit XML report per file in DIR/reports; it prints its usual
output, then a summary: counts per file, then every failure with the line of its message that
names it. The exit status is 0 where every test passed (or was skipped), else 1. The script
needs git (for a bare directory) and pytest, and no network.
"""

import argparse
import collections
import dataclasses
import fnmatch
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple
import xml.etree.ElementTree as ElementTree

CHECKOUT = pathlib.Path(__file__).resolve().parents[1]
#: The package directory the copied tests import seed_rl from.
PACKAGE = CHECKOUT / 'seed_rl'
#: Where the original's test-support modules that this checkout lacks are copied, inside DIR.
SUPPORT_PACKAGE = 'original_support'
#: Where the tests are copied, inside DIR. pytest names a test module after its path below DIR
#: (`original_tests.grpc.python.ops_test`): without this prefix the module `grpc` that it
#: registers for `grpc/python/ops_test.py` would hide grpcio.
TESTS_PACKAGE = 'original_tests'


@dataclasses.dataclass(frozen=True)
class Rewrite(object):
  """One textual change to the copied files: `pattern` (a regex, multiline) -> `replacement`.

  `helper`, when set, is Python code inserted after the file's imports the first time the
  rewrite applies to it (a function the replacement calls). `paths`, when set, are the only
  files (fnmatch patterns of the original's paths) it applies to.
  """
  name: str
  pattern: str
  replacement: str
  helper: Optional[str] = None
  paths: Tuple[str, ...] = ()

  def apply(self, text: str, relative_path: str = '') -> Tuple[str, int]:
    """The rewritten text and how many places changed."""
    if self.paths and not any(fnmatch.fnmatch(relative_path, p) for p in self.paths):
      return text, 0
    text, count = re.subn(self.pattern, self.replacement, text, flags=re.MULTILINE)
    if count and self.helper and self.helper.strip() not in text:
      text = _insert_after_imports(text, self.helper)
    return text, count


#: The import paths of this repository; applied to every copied file.
IMPORT_REWRITES = (
    Rewrite('gRPC ops module -> seed_rl.grpc',
            r'^(\s*)from seed_rl\.grpc\.python import ops\b', r'\1from seed_rl import grpc as ops'),
    Rewrite('environments under seed_rl.environments',
            r'\bseed_rl\.(atari|dmlab|football|mujoco)\b', r'seed_rl.environments.\1'),
    Rewrite('tf.enable_v2_behavior() dropped (TensorFlow 2 behaves so)',
            r'^(\s*)tf\.(compat\.v1\.)?enable_v2_behavior\(\)[ \t]*$', r'\1pass'),
)

_KERAS_MINIMIZE_HELPER = '''

def _keras3_minimize(optimizer, loss, var_list):
  """optimizer.minimize(loss, var_list) of Keras 2, on a Keras 3 optimizer."""
  var_list = list(var_list() if callable(var_list) else var_list)
  with tf.GradientTape() as tape:
    value = loss()
  optimizer.apply_gradients(zip(tape.gradient(value, var_list), var_list))
'''

_KERAS_LSTM_CELL_HELPER = '''
_KERAS3_LSTM_CELLS = {}


def _keras3_lstm_cell(units, **kwargs):
  """tf.keras.layers.LSTMCell(units, **kwargs), made at the first call and reused after.

  Keras 2's cell created no variable until it was built; Keras 3's creates its seed generator's
  when constructed, which a tf.function may not do after its first trace. Equal cells become
  one object, which only serves cells that give an initial state, never weights.
  """
  key = (units, repr(sorted(kwargs.items())))
  if key not in _KERAS3_LSTM_CELLS:
    _KERAS3_LSTM_CELLS[key] = tf.keras.layers.LSTMCell(units, **kwargs)
  return _KERAS3_LSTM_CELLS[key]
'''

_GYM_MAKE_HELPER = '''

def _gym_make_unchecked(*args, **kwargs):
  """gym.make without gym 0.25's passive env checker, which uses np.bool8 (gone in numpy 2)."""
  return gym.make(*args, disable_env_checker=True, **kwargs)
'''

#: The tests' own uses of library APIs that today's libraries removed; only with --fix-libraries.
#: A rewrite that would change other code of the same shape (any `x.minimize(`, every LSTMCell)
#: is limited to the files that need it.
LIBRARY_FIXES = (
    Rewrite('numpy 2: np.bool8 -> np.bool_', r'\bnp\.bool8\b', 'np.bool_'),
    # The receiver is the whole dotted name (`self.optimizer`), not its last part.
    Rewrite('Keras 3: optimizer.minimize(loss, vars) -> GradientTape + apply_gradients',
            r'(?<![\w.])((?:\w+\.)*\w+)\.minimize\(', r'_keras3_minimize(\1, ',
            _KERAS_MINIMIZE_HELPER, paths=('agents/policy_gradient/modules/constraints_test.py',)),
    Rewrite('Keras 3: RNN cell get_initial_state(batch_size=..., dtype=...) takes batch_size',
            r'\.get_initial_state\(batch_size=(\w+), dtype=[\w.]+\)',
            r'.get_initial_state(batch_size=\1)'),
    # Its cells only give the initial state of a core: one object per size does no harm there.
    Rewrite('Keras 3: LSTMCell(...) constructed again in a tf.function -> made once, reused',
            r'\btf\.keras\.layers\.LSTMCell\(', '_keras3_lstm_cell(', _KERAS_LSTM_CELL_HELPER,
            paths=('agents/policy_gradient/modules/continuous_control_agent_test.py',)),
    Rewrite('numpy 2: gym.make(...) -> without the env checker of gym 0.25, which uses np.bool8',
            r'\bgym\.make\(', '_gym_make_unchecked(', _GYM_MAKE_HELPER),
    # seed_rl's envs are Gymnasium's; gfootball's own (gym.make above) are gym 0.25's, 4 values.
    Rewrite("gymnasium: step returns 5 values (done is terminated or truncated)",
            r'^(\s*)(\w+), (\w+), done, (\w+) = (.*\.step\(.*\))[ \t]*$',
            r'\1\2, \3, _terminated, _truncated, \4 = \5\n\1done = _terminated or _truncated',
            paths=('mujoco/*',)),
)


def _insert_after_imports(text: str, code: str) -> str:
  """`code` inserted after the last top-level import of `text` (or at its start)."""
  lines = text.splitlines(keepends=True)
  last_import = -1
  for index, line in enumerate(lines):
    if re.match(r'(import|from) \S', line):
      last_import = index
  lines.insert(last_import + 1, '\n\n' + code.strip('\n') + '\n')
  return ''.join(lines)


class Original(object):
  """The original repository's Python files, read from a bare git directory or a checkout."""

  def __init__(self, path: pathlib.Path):
    self.path = path
    self.is_bare_git = (path / 'HEAD').is_file() and (path / 'objects').is_dir()
    if not self.is_bare_git and not path.is_dir():
      raise SystemExit(f'{path}: not a directory; give the original repository as a bare git '
                       'directory or a checkout')

  def python_files(self) -> List[str]:
    """Paths (relative, '/'-separated) of every .py file."""
    if self.is_bare_git:
      listing = self._git('ls-tree', '-r', '--name-only', 'HEAD')
      return sorted(p for p in listing.splitlines() if p.endswith('.py'))
    return sorted(p.relative_to(self.path).as_posix() for p in self.path.rglob('*.py')
                  if '.git' not in p.relative_to(self.path).parts)

  def read(self, relative_path: str) -> str:
    if self.is_bare_git:
      return self._git('show', f'HEAD:{relative_path}')
    return (self.path / relative_path).read_text()

  def _git(self, *args: str) -> str:
    try:
      return subprocess.run(['git', f'--git-dir={self.path}', *args], check=True,
                            capture_output=True, text=True).stdout
    except FileNotFoundError:
      raise SystemExit('git is not installed; it is needed to read a bare git directory '
                       '(or give a checkout of the original instead)') from None
    except subprocess.CalledProcessError as e:
      raise SystemExit(f'git --git-dir={self.path} {" ".join(args)} failed: '
                       f'{e.stderr.strip()}') from None


def _is_test(relative_path: str) -> bool:
  return relative_path.endswith('_test.py')


def _is_test_support(relative_path: str) -> bool:
  """A module that only tests use: test_utils.py, testing.py and the like, not a test itself."""
  name = relative_path.rsplit('/', 1)[-1]
  return not _is_test(relative_path) and 'test' in name


def _rewrite(text: str, rewrites: Sequence[Rewrite], applied: Dict[str, int],
             relative_path: str = '') -> str:
  for rewrite in rewrites:
    text, count = rewrite.apply(text, relative_path)
    if count:
      applied[rewrite.name] += count
  return text


def _missing_support(support_modules: Sequence[str]) -> Dict[str, Rewrite]:
  """The test-support modules this checkout lacks, each with the import that finds its copy."""
  missing = {}
  for relative_path in support_modules:
    package, module = relative_path[:-len('.py')].rsplit('/', 1)
    ours = _rewrite(f'seed_rl.{package.replace("/", ".")}', IMPORT_REWRITES,
                    collections.Counter())
    if (PACKAGE.parent / ours.replace('.', '/') / f'{module}.py').is_file():
      continue
    copy = f'{SUPPORT_PACKAGE}.{package.replace("/", ".")}'
    missing[relative_path] = Rewrite(f'{module} from the original',
                                     rf'\bfrom {re.escape(ours)} import {module}\b',
                                     f'from {copy} import {module}')
  return missing


def copy_tests(original: Original, out: pathlib.Path,
               fix_libraries: bool) -> Tuple[List[pathlib.Path], Dict[str, int], List[str]]:
  """Writes the rewritten tests into `out`.

  Returns the test files written, the number of changes per rewrite, and the test-support
  modules copied from the original (those this checkout lacks).
  """
  files = original.python_files()
  tests = [p for p in files if _is_test(p)]
  if not tests:
    raise SystemExit(f'{original.path}: no *_test.py files; is it the original repository?')
  missing_support = _missing_support([p for p in files if _is_test_support(p)])
  copied_support = sorted(missing_support)
  rewrites = list(IMPORT_REWRITES) + list(missing_support.values())
  if fix_libraries:
    rewrites += LIBRARY_FIXES
  applied = collections.Counter()
  written = []
  for relative_path in tests + copied_support:
    target = out / TESTS_PACKAGE / relative_path
    if relative_path in copied_support:
      target = out / SUPPORT_PACKAGE / relative_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_rewrite(original.read(relative_path), rewrites, applied, relative_path))
    if relative_path in tests:
      written.append(target)
  return written, dict(applied), copied_support


#: Written into DIR: what each test's own `tf.test.main()` did before its tests ran, under
#: pytest. absltest parsed the command line, so the flags the tests' modules define (the Atari
#: env's --game, ...) are read with their defaults instead of raising UnparsedFlagAccessError.
CONFTEST = '''"""Marks absl's flags parsed, as tf.test.main() did before the tests ran."""
from absl import flags

flags.FLAGS.mark_as_parsed()
'''


def _write_pytest_config(out: pathlib.Path, timeout_s: int) -> pathlib.Path:
  (out / 'conftest.py').write_text(CONFTEST)
  ini = out / 'pytest.ini'
  ini.write_text('[pytest]\n'
                 'addopts = -ra\n'
                 f'timeout = {timeout_s}\n'
                 'filterwarnings =\n'
                 '    ignore::DeprecationWarning\n')
  return ini


def run_pytest(out: pathlib.Path, tests: Sequence[pathlib.Path], pytest_args: Sequence[str],
               timeout_s: int) -> Tuple[bool, Dict[str, Optional[pathlib.Path]]]:
  """Runs pytest on each of `tests` with this checkout's seed_rl, in a process of its own.

  One process per file, as each test binary of the original ran: a test module may configure
  TensorFlow's devices before they are initialized (`simulate_two_devices`).

  Returns:
    Whether every run succeeded (pytest's status 0, or 5: no test selected), and each test
    file's junit XML report (None where pytest wrote none), by the file's original path.
  """
  ini = _write_pytest_config(out, timeout_s)
  environment = dict(os.environ)
  environment['PYTHONPATH'] = os.pathsep.join(
      p for p in (str(CHECKOUT), str(out), environment.get('PYTHONPATH')) if p)
  succeeded = True
  reports = {}
  for index, test in enumerate(tests):
    name = test.relative_to(out / TESTS_PACKAGE).as_posix()
    report = out / 'reports' / f'{index:03d}.xml'
    print(f'\n=== {name} ===', flush=True)
    command = [sys.executable, '-m', 'pytest', '-c', str(ini), '--rootdir', str(out),
               '--import-mode=importlib', '-p', 'no:cacheprovider', '--junitxml', str(report),
               *pytest_args, str(test.relative_to(out))]
    status = subprocess.run(command, cwd=out, env=environment, check=False).returncode
    succeeded = succeeded and status in (0, 5)
    reports[name] = report if report.is_file() else None
  return succeeded, reports


@dataclasses.dataclass
class Outcome(object):
  passed: int = 0
  failed: int = 0
  skipped: int = 0


def _first_line(problem: ElementTree.Element) -> str:
  """The line of a failure that names it.

  The message's first line, or where that only leads in ('... in user code:', 'collection
  failure') the last error line ('E   ...') of the traceback, else the message's last line.
  """
  message = [line.strip() for line in (problem.get('message') or '').splitlines()
             if line.strip()]
  if message and not message[0].endswith(':') and message[0] != 'collection failure':
    return message[0]
  errors = [line[1:].strip() for line in (problem.text or '').splitlines()
            if line.startswith('E ') and line[1:].strip()]
  return errors[-1] if errors else (message[-1] if message else '')


def read_report(test_file: str,
                report: pathlib.Path) -> Tuple[Outcome, List[Tuple[str, str]]]:
  """The counts of one test file's report, and (pytest's test id, message line) of each
  failure."""
  module = f'{TESTS_PACKAGE}.{test_file[:-len(".py")].replace("/", ".")}'
  outcome = Outcome()
  failures = []
  for case in ElementTree.parse(report).getroot().iter('testcase'):
    problem = case.find('failure')
    if problem is None:
      problem = case.find('error')
    if problem is not None:
      outcome.failed += 1
      # classname is the module's dotted name, then the class's if any.
      test_class = (case.get('classname') or '')[len(module) + 1:]
      test_id = '::'.join(part for part in (test_file, test_class, case.get('name'))
                          if part and part != module)
      failures.append((test_id, _first_line(problem)))
    elif case.find('skipped') is not None:
      outcome.skipped += 1
    else:
      outcome.passed += 1
  return outcome, failures


def print_summary(reports: Dict[str, Optional[pathlib.Path]], applied: Dict[str, int],
                  copied_support: Sequence[str]) -> Outcome:
  """Prints the rewrites, the counts per file and every failure; returns the totals."""
  print('\n=== Original tests against this checkout ===')
  for name, count in sorted(applied.items()):
    print(f'rewrite: {name} ({count}x)')
  for path in copied_support:
    print(f'test support from the original (this checkout has none): {path}')
  print(f'\n{"passed":>7} {"failed":>7} {"skipped":>7}  file')
  total = Outcome()
  all_failures = []
  for name, report in reports.items():
    if report is None:
      print(f'{"-":>7} {"-":>7} {"-":>7}  {name} (pytest wrote no report)')
      total.failed += 1
      all_failures.append((name, 'pytest wrote no report'))
      continue
    outcome, failures = read_report(name, report)
    all_failures += failures
    print(f'{outcome.passed:7d} {outcome.failed:7d} {outcome.skipped:7d}  {name}')
    total.passed += outcome.passed
    total.failed += outcome.failed
    total.skipped += outcome.skipped
  print(f'{total.passed:7d} {total.failed:7d} {total.skipped:7d}  total')
  if all_failures:
    print('\nFailures:')
    for test_id, message in all_failures:
      print(f'  {test_id}: {message[:200]}')
  print(f'\npassed {total.passed}, failed {total.failed}, skipped {total.skipped}')
  return total


def _parse_args(argv: Sequence[str]) -> Tuple[argparse.Namespace, List[str]]:
  argv = list(argv)
  pytest_args = []
  if '--' in argv:
    pytest_args = argv[argv.index('--') + 1:]
    argv = argv[:argv.index('--')]
  fixes = '\n'.join(f'  {fix.name}' for fix in LIBRARY_FIXES)
  parser = argparse.ArgumentParser(
      description=__doc__.split('\n\n', 1)[0],
      epilog=f'--fix-libraries applies:\n{fixes}',
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('original', type=pathlib.Path,
                      help='the original repository: a bare git directory or a checkout')
  parser.add_argument('--out', type=pathlib.Path,
                      help='directory for the rewritten tests and the report (kept); must be '
                           'empty or new. Default: a temporary directory, removed afterwards')
  parser.add_argument('--fix-libraries', action='store_true',
                      help="also update the tests' own calls of removed library APIs")
  parser.add_argument('--timeout', type=int, default=300,
                      help='seconds each test may take (pytest-timeout)')
  return parser.parse_args(argv), pytest_args


def main(argv: Sequence[str]) -> int:
  args, pytest_args = _parse_args(argv)
  original = Original(args.original.resolve())
  if args.out is None:
    out = pathlib.Path(tempfile.mkdtemp(prefix='seed_rl_original_tests_'))
  else:
    out = args.out.resolve()
    if out.exists() and any(out.iterdir()):
      raise SystemExit(f'--out {out}: not empty; give a new or empty directory')
    out.mkdir(parents=True, exist_ok=True)
  try:
    tests, applied, copied_support = copy_tests(original, out, args.fix_libraries)
    succeeded, reports = run_pytest(out, tests, pytest_args, args.timeout)
    print_summary(reports, applied, copied_support)
    return 0 if succeeded else 1
  finally:
    if args.out is None:
      shutil.rmtree(out, ignore_errors=True)


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
