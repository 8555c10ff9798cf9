"""scripts/original_tests.py on a small fake "original" repository written by the tests.

The script's runs are real: git reads the bare repository, pytest runs the rewritten tests in
processes of their own against this checkout's seed_rl, and the summary is read from its output.
The fake tests import no TensorFlow, so that a run takes seconds.
"""

import importlib.util
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / 'scripts' / 'original_tests.py'

pytestmark = pytest.mark.timeout(120)

# Relative path -> source of the fake original repository (its root is the seed_rl package).
FAKE_ORIGINAL = {
    'atari/imports_test.py': '''
        import seed_rl.atari

        def test_environment_path():
          assert seed_rl.atari.__name__ == 'seed_rl.environments.atari'

        if __name__ == '__main__':  # Not run by pytest; the script rewrites the first line.
          tf.enable_v2_behavior()
          tf.test.main()
        ''',
    # A test below a directory named grpc: the module pytest names after it must not hide grpcio.
    'grpc/python/ops_test.py': '''
        from seed_rl.grpc.python import ops

        def test_grpc_path():
          assert ops.__name__ == 'seed_rl.grpc' and ops.Client
        ''',
    'common/flags_test.py': '''
        from absl import flags
        flags.DEFINE_string('fake_game', 'Pong', 'A flag read by a test, as env modules do.')

        def test_flag_is_read_with_its_default():
          assert flags.FLAGS.fake_game == 'Pong'

        def test_failing():
          raise ValueError('a failure the summary names')
        ''',
    # seed_rl's MuJoCo envs are Gymnasium's: --fix-libraries makes their step give 5 values.
    'mujoco/libraries_test.py': '''
        import numpy as np
        import pytest

        class FiveValueEnv(object):
          def step(self, action):
            return action, 1., False, True, {}

        def test_bool8():
          assert np.zeros(2, np.bool8).dtype == np.bool_

        def test_gym_step():
          env = FiveValueEnv()
          obs, _, done, _ = env.step(3)
          assert (obs, done) == (3, True)

        @pytest.mark.skip(reason='skipped on purpose')
        def test_skipped():
          pass
        ''',
    'dmlab/missing_test.py': '''
        import a_library_not_installed_here
        ''',
    'agents/fake/support_test.py': '''
        from seed_rl.agents.fake import test_utils

        def test_support_module_comes_from_the_original():
          assert test_utils.ORIGIN == 'original'
        ''',
    'agents/fake/test_utils.py': '''
        ORIGIN = 'original'
        ''',
    # This checkout has its own module of this name: the original's is not copied.
    'agents/policy_gradient/modules/test_utils.py': '''
        ORIGIN = 'original'
        ''',
}


def _write_tree(root: pathlib.Path, files: dict) -> None:
  for relative_path, source in files.items():
    path = root / relative_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip())


def _git(*args: str, cwd: pathlib.Path) -> None:
  subprocess.run(['git', '-c', 'user.name=test', '-c', 'user.email=test@example.com', *args],
                 cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture(name='original_git_dir', scope='module')
def _original_git_dir(tmp_path_factory) -> pathlib.Path:
  """The fake original as a bare git directory, as the fetched original is."""
  work = tmp_path_factory.mktemp('original_checkout')
  _write_tree(work, FAKE_ORIGINAL)
  _git('init', '-q', '.', cwd=work)
  _git('add', '.', cwd=work)
  _git('commit', '-q', '-m', 'fake original', cwd=work)
  bare = tmp_path_factory.mktemp('original') / 'repo'
  _git('clone', '-q', '--bare', str(work), str(bare), cwd=work)
  return bare


def _run(original: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(SCRIPT), str(original), *args], cwd=ROOT,
                        capture_output=True, text=True, timeout=100, check=False)


def _summary_rows(stdout: str) -> dict:
  """file -> (passed, failed, skipped) of the summary table."""
  rows = {}
  for line in stdout.split('=== Original tests against this checkout ===')[-1].splitlines():
    parts = line.split()
    if len(parts) == 4 and all(p.isdigit() for p in parts[:3]):
      rows[parts[3]] = tuple(int(p) for p in parts[:3])
  return rows


def test_without_library_fixes(original_git_dir, tmp_path):
  out = tmp_path / 'out'
  result = _run(original_git_dir, '--out', str(out), '--', '-q')
  assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
  assert _summary_rows(result.stdout) == {
      'agents/fake/support_test.py': (1, 0, 0),
      'atari/imports_test.py': (1, 0, 0),
      'common/flags_test.py': (1, 1, 0),
      'mujoco/libraries_test.py': (0, 2, 1),
      'dmlab/missing_test.py': (0, 1, 0),
      'grpc/python/ops_test.py': (1, 0, 0),
      'total': (4, 4, 1)}, result.stdout[-3000:]
  assert 'passed 4, failed 4, skipped 1' in result.stdout
  assert ("dmlab/missing_test.py: ModuleNotFoundError: No module named "
          "'a_library_not_installed_here'") in result.stdout
  assert ('common/flags_test.py::test_failing: ValueError: a failure the summary names'
          in result.stdout)
  assert "module 'numpy' has no attribute 'bool8'" in result.stdout
  assert 'too many values to unpack' in result.stdout
  # The support module this checkout lacks is copied; the one it has is not.
  assert (out / 'original_support/agents/fake/test_utils.py').is_file()
  assert not (out / 'original_support/agents/policy_gradient').exists()
  assert 'test support from the original (this checkout has none): agents/fake/test_utils.py' in (
      result.stdout)
  tests = out / 'original_tests'
  assert 'from seed_rl import grpc as ops' in (tests / 'grpc/python/ops_test.py').read_text()
  rewritten = (tests / 'atari/imports_test.py').read_text()
  assert 'enable_v2_behavior' not in rewritten and '  pass\n' in rewritten
  assert 'np.bool8' in (tests / 'mujoco/libraries_test.py').read_text()  # Left as it was.


def test_with_library_fixes_from_a_checkout(original_git_dir, tmp_path):
  checkout = tmp_path / 'checkout'
  _git('clone', '-q', str(original_git_dir), str(checkout), cwd=tmp_path)
  result = _run(checkout, '--fix-libraries', '--', '-q')
  assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
  rows = _summary_rows(result.stdout)
  assert rows['mujoco/libraries_test.py'] == (2, 0, 1), result.stdout[-3000:]
  assert rows['total'] == (6, 2, 1)
  assert 'rewrite: numpy 2: np.bool8 -> np.bool_ (1x)' in result.stdout


def test_refuses_a_non_empty_out_and_a_tree_without_tests(original_git_dir, tmp_path):
  (tmp_path / 'out').mkdir()
  (tmp_path / 'out' / 'kept').write_text('')
  result = _run(original_git_dir, '--out', str(tmp_path / 'out'))
  assert result.returncode != 0 and 'not empty' in result.stderr
  (tmp_path / 'empty').mkdir()
  result = _run(tmp_path / 'empty')
  assert result.returncode != 0 and 'no *_test.py files' in result.stderr


def _script_module():
  spec = importlib.util.spec_from_file_location('original_tests', SCRIPT)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


# The original's files that the minimize and LSTMCell fixes are for.
MINIMIZE_TEST = 'agents/policy_gradient/modules/constraints_test.py'
LSTM_CELL_TEST = 'agents/policy_gradient/modules/continuous_control_agent_test.py'


@pytest.mark.parametrize('receiver', ['opt', 'holder.opt'])
def test_keras_minimize_fix_trains_with_a_keras_3_optimizer(receiver):
  """The fix of Keras 2's `optimizer.minimize`, executed with TensorFlow's Keras 3, on an
  optimizer named by a name or by a dotted one (`self.optimizer`)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  script = _script_module()
  source = textwrap.dedent(f'''
      import types
      import tensorflow as tf
      x = tf.Variable(3.)
      opt = tf.keras.optimizers.SGD(0.25)
      holder = types.SimpleNamespace(opt=opt)
      {receiver}.minimize(lambda: x * x, [x])
      ''')
  rewritten, counts = source, {}
  for fix in script.LIBRARY_FIXES:
    rewritten, counts[fix.name] = fix.apply(rewritten, MINIMIZE_TEST)
  assert sum(counts.values()) == 1, counts
  assert f'_keras3_minimize({receiver}, lambda: x * x, [x])' in rewritten
  namespace = {}
  exec(compile(rewritten, 'snippet', 'exec'), namespace)  # pylint: disable=exec-used
  assert isinstance(namespace['x'], tf.Variable)
  assert float(namespace['x'].numpy()) == pytest.approx(3. - 0.25 * 6.)


def _library_fix(name_part: str):
  return next(f for f in _script_module().LIBRARY_FIXES if name_part in f.name)


def test_keras_minimize_fix_leaves_other_files_alone():
  """Other `minimize` calls (scipy's) are not Keras 2 optimizers'."""
  fix = _library_fix('minimize')
  for text in ('scipy.optimize.minimize(f, x0)\n', 'self.optimizer.minimize(loss, v)\n'):
    assert fix.apply(text, 'common/utils_test.py') == (text, 0)


def test_keras_lstm_cell_fix_lets_a_tf_function_make_one():
  """Keras 3's LSTMCell creates a variable when constructed: a tf.function that constructs one
  (as the original's tests do for an initial state) fails unless it is made only once."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  source = textwrap.dedent('''
      import tensorflow as tf

      @tf.function
      def initial_state(batch_size):
        cell = tf.keras.layers.LSTMCell(4)
        return cell.get_initial_state(batch_size=batch_size)
      ''')
  fix = _library_fix('LSTMCell')
  for text, works in ((source, False), (fix.apply(source, LSTM_CELL_TEST)[0], True)):
    namespace = {}
    exec(compile(text, 'snippet', 'exec'), namespace)  # pylint: disable=exec-used
    if not works:
      with pytest.raises(ValueError, match='singleton tf.Variables'):
        namespace['initial_state'](tf.constant(2))
      continue
    state = namespace['initial_state'](tf.constant(2))
    assert [t.shape for t in state] == [(2, 4), (2, 4)] and not any(tf.reduce_any(
        t != 0) for t in state)


def test_keras_lstm_cell_fix_is_only_for_the_file_that_needs_it():
  """The fix makes equal cells one object: in a stack of equal layers (another file's) they
  would share their weights."""
  stack = 'cells = [tf.keras.layers.LSTMCell(8) for _ in range(2)]\n'
  fix = _library_fix('LSTMCell')
  assert fix.apply(stack, 'agents/r2d2/networks_test.py') == (stack, 0)
  assert fix.apply(stack, LSTM_CELL_TEST)[1] == 1


def test_rnn_initial_state_and_gym_fixes():
  fix = _library_fix('get_initial_state')
  assert fix.apply('rnn.get_initial_state(batch_size=batch_size, dtype=tf.float32)') == (
      'rnn.get_initial_state(batch_size=batch_size)', 1)
  text, count = _library_fix('gym.make').apply('import gym\nenv = gym.make("Pong", a=1)\n')
  assert count == 1 and 'env = _gym_make_unchecked("Pong", a=1)' in text
  assert 'gym.make(*args, disable_env_checker=True, **kwargs)' in text
  # gfootball's envs are gym 0.25's (4 values): the step fix is for seed_rl's MuJoCo envs only.
  step = 'obs, _, done, _ = env.step(0)\n'
  fix = _library_fix('5 values')
  assert fix.apply(step, 'football/observation_test.py') == (step, 0)
  assert fix.apply(step, 'mujoco/environment_test.py') == (
      'obs, _, _terminated, _truncated, _ = env.step(0)\ndone = _terminated or _truncated\n', 1)
