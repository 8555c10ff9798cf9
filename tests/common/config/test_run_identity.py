"""Tests of `seed_rl.common.config.run_identity`: what sets runs apart, read from run records."""

import json

from absl import flags
import pytest

from seed_rl.common.config import run_identity
from seed_rl.common.learner_runtime import run_record

pytestmark = pytest.mark.timeout(60)


def _create_environment(env_id, config):
  del env_id, config


def _write_record(logdir, agent: str = 'VTRACE', *args: str) -> None:
  """The run record a learner started with flags `args` writes."""
  flag_values = flags.FlagValues()
  flags.DEFINE_string('logdir', '/tmp/agent', '', flag_values=flag_values)
  flags.DEFINE_integer('seed', None, '', flag_values=flag_values)
  flags.DEFINE_string('game', 'Pong', '', flag_values=flag_values)
  flags.DEFINE_bool('normalize_observations', False, '', flag_values=flag_values)
  flags.DEFINE_float('target_entropy', None, '', flag_values=flag_values)
  flags.DEFINE_multi_string('gin_bindings', [], '', flag_values=flag_values)
  flag_values(['learner', f'--logdir={logdir}', *args])
  run_record.write(str(logdir), flag_values, _create_environment, agent)


def _labels(tmp_path, *runs) -> list:
  """Identity labels of runs given as (agent, flags...)."""
  records = []
  for index, (agent, *args) in enumerate(runs):
    _write_record(tmp_path / str(index), agent, *args)
    records.append(run_identity.read_record(str(tmp_path / str(index))))
  return [identity.label for identity in run_identity.identities(records)]


def test_seeds_and_logdirs_do_not_set_runs_apart(tmp_path):
  assert _labels(tmp_path, ('R2D2', '--seed=1'), ('R2D2', '--seed=2')) == ['Pong · R2D2'] * 2


def test_booleans_and_unset_flags_are_labelled_as_they_were_given(tmp_path):
  assert _labels(tmp_path, ('VTRACE', '--normalize_observations', '--target_entropy=-1.5'),
                 ('VTRACE', '--nonormalize_observations')) == [
                     'Pong · VTRACE · --normalize_observations · --target_entropy=-1.5',
                     'Pong · VTRACE · --nonormalize_observations · --target_entropy unset']


def test_flags_are_compared_within_one_environment_and_agent(tmp_path):
  assert _labels(tmp_path, ('VTRACE', '--gin_bindings=a=1', '--gin_bindings=b=2'),
                 ('VTRACE', '--gin_bindings=a=1'), ('R2D2', '--nonormalize_observations'),
                 ('VTRACE', '--game=Breakout', '--normalize_observations')) == [
                     'Pong · VTRACE · --gin_bindings=a=1 --gin_bindings=b=2',
                     'Pong · VTRACE · --gin_bindings=a=1', 'Pong · R2D2', 'Breakout · VTRACE']


def test_the_entry_point_is_labelled_where_it_differs():
  records = [run_identity.RunRecord(f'/runs/{i}', entry_point, 'VTRACE',
                                    {'env_name': '--env_name=HalfCheetah-v5'})
             for i, entry_point in enumerate(['seed_rl.environments.mujoco.vtrace_main',
                                              'seed_rl.environments.gym.vtrace_main'])]
  first, second = run_identity.identities(records)
  assert first != second
  assert second.label == 'HalfCheetah-v5 · VTRACE · seed_rl.environments.gym.vtrace_main'


def test_the_last_learner_start_is_the_record(tmp_path):
  _write_record(tmp_path, 'VTRACE')
  _write_record(tmp_path, 'R2D2')
  record = run_identity.read_record(str(tmp_path))
  assert record.agent == 'R2D2' and record.env == 'Pong'
  assert len((tmp_path / 'runs.jsonl').read_text().splitlines()) == 2
  assert run_identity.read_record(str(tmp_path / 'nothing')) is None


def test_an_unreadable_record_names_its_file(tmp_path):
  (tmp_path / 'runs.jsonl').write_text('{"agent": "VTRACE"}\n{"agent": \n')
  with pytest.raises(run_identity.RecordError,
                     match=f'{tmp_path / "runs.jsonl"}: its last line is not JSON'):
    run_identity.read_record(str(tmp_path))


def test_run_logdirs_below_a_parent_are_found_but_not_inside_a_run(tmp_path):
  for name in ('b/seed1', 'a', 'a/nested'):
    _write_record(tmp_path / name)
  assert run_identity.find_run_logdirs(str(tmp_path)) == [str(tmp_path / 'a'),
                                                          str(tmp_path / 'b' / 'seed1')]


def test_a_script_run_by_path_is_named_by_its_file_also_in_older_records(tmp_path):
  """Learners older than `entry_point_file` recorded a script run by path only in `argv`."""
  for name, entry in {'new': {'entry_point_file': '/project/learner_main.py'},
                      'old': {'argv': ['/project/learner_main.py', '--run_mode=learner']},
                      'relative': {'argv': ['project/learner_main.py']}}.items():
    (tmp_path / name).mkdir()
    (tmp_path / name / run_identity.RUNS_FILE).write_text(
        json.dumps(dict(entry, entry_point=None, agent='VTRACE')) + '\n')
    assert run_identity.read_record(str(tmp_path / name)).entry_point == 'learner_main.py', name


def test_the_last_start_is_read_from_text(tmp_path, monkeypatch):
  """A relative `argv[0]` of an older record is taken from the current directory."""
  monkeypatch.chdir(tmp_path)
  text = (json.dumps({'entry_point': 'a.main', 'agent': 'R2D2'}) + '\n' +
          json.dumps({'entry_point': None, 'argv': ['learner.py'], 'agent': 'VTRACE',
                      'create_env_fn': '__main__:create_environment'}) + '\n\n')
  assert run_identity.last_start(text, 'runs.jsonl') == run_identity.Start(
      None, str(tmp_path / 'learner.py'), '__main__:create_environment', 'VTRACE')
  assert run_identity.last_start('\n', 'runs.jsonl') == run_identity.Start()
  with pytest.raises(run_identity.RecordError, match='^runs.jsonl: its last line is not a JSON '
                                                     'object$'):
    run_identity.last_start('[1]\n', 'runs.jsonl')


@pytest.mark.parametrize('name, write, message', [
    (run_identity.RUNS_FILE, lambda path: path.write_bytes(b'{"agent": "VTRACE"}\n\xff\n'),
     '{path} is not UTF-8 text (byte 0xff at offset 20), so it is damaged'),
    (run_identity.FLAGS_FILE, lambda path: path.write_bytes(b'--game=Pong\xe9\n'),
     '{path} is not UTF-8 text (byte 0xe9 at offset 11), so it is damaged'),
    (run_identity.RUNS_FILE, lambda path: path.mkdir(), '{path} is a directory, not a file'),
    (run_identity.FLAGS_FILE, lambda path: path.mkdir(), '{path} is a directory, not a file'),
    (run_identity.RUNS_FILE, lambda path: path.write_text('{"agent": ["VTRACE"]}\n'),
     '{path}: its last line has agent ["VTRACE"], not a string, so it is damaged'),
    (run_identity.RUNS_FILE, lambda path: path.write_text('{"argv": "learner.py"}\n'),
     '{path}: its last line has argv "learner.py", not a list, so it is damaged'),
])
def test_a_damaged_record_file_is_a_record_error_naming_it(tmp_path, name, write, message):
  """Not a UnicodeDecodeError, IsADirectoryError or TypeError from deep inside a reader, and
  not a logdir taken for one without a record."""
  path = tmp_path / name
  write(path)
  assert run_identity.has_record(str(tmp_path))
  with pytest.raises(run_identity.RecordError) as error:
    run_identity.read_record(str(tmp_path))
  assert str(error.value) == message.format(path=path)
