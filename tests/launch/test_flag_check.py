"""seed_rl.launch.flag_check: an entry point's flags checked in about a second, without
TensorFlow, as run_local.sh and gcp/train_*.sh do before anything starts."""

import os
import subprocess
import sys
import time

import pytest

from seed_rl.agents.policy_gradient import config as pg_config
from seed_rl.common.config import learner_config
from seed_rl.launch import flag_check
from tests import processes

ROOT = processes.ROOT
ENTRY_POINTS = sorted(
    f'seed_rl.environments.{path.parent.name}.{path.stem}'
    for path in (ROOT / 'seed_rl' / 'environments').glob('*/*_main.py'))


def _check(module, *argv, options=()):
  environment = dict(os.environ, PYTHONPATH=str(ROOT))
  start = time.monotonic()
  result = subprocess.run([sys.executable, '-m', 'seed_rl.launch.flag_check', *options, module,
                           *argv], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=110)
  return result, time.monotonic() - start


def _config(config_class=learner_config.LearnerConfig, **values):
  defaults = dict(num_envs=8, env_batch_size=2, inference_batch_size=-1, batch_size=4,
                  unroll_length=10, unroll_queue_max_size=1, save_checkpoint_secs=1800,
                  log_episode_frequency=1, checkpoints_to_keep=3, num_eval_envs=0,
                  double_buffered_acting=False)
  defaults.update(values)
  return config_class(**defaults)


@pytest.mark.timeout(30)
@pytest.mark.parametrize('values, message', [
    (dict(num_envs=0), '--num_envs=0 (SHAPE) must be positive'),
    (dict(env_batch_size=0), '--env_batch_size must be positive, got 0'),
    (dict(inference_batch_size=0), '--inference_batch_size must be positive or -1, got 0'),
    (dict(inference_batch_size=3), '--inference_batch_size=3 must be a multiple of '
                                    '--env_batch_size=2'),
    (dict(inference_batch_size=10), '--inference_batch_size=10 is more than --num_envs=8 '
                                     '(SHAPE): the learner runs full inference batches only'),
    # -1 resolves to max(env_batch_size, num_envs // 2) = 3, not a whole number of calls of 2.
    (dict(num_envs=6, env_batch_size=2), 'the inference batch size (3, from '
                                         '--inference_batch_size=-1) must be a multiple'),
    (dict(batch_size=0), '--batch_size must be positive, got 0'),
    (dict(num_eval_envs=8), '--num_eval_envs=8 leaves no training environment'),
    (dict(num_envs=6, env_batch_size=3, double_buffered_acting=True),
     '--double_buffered_acting splits the environments of each actor into two halves: '
     '--env_batch_size must be even, got 3'),
])
def test_learner_config_checks_name_the_flags(values, message):
  with pytest.raises(flag_check.FlagCheckError) as raised:
    flag_check.check_learner_config(_config(**values), shape='SHAPE')
  assert message in str(raised.value)
  assert '\n' not in str(raised.value)


@pytest.mark.timeout(30)
def test_good_learner_configs_pass_unchanged():
  config = _config()
  flag_check.check_learner_config(config)
  assert config.inference_batch_size == -1
  flag_check.check_learner_config(_config(num_envs=1, env_batch_size=1))
  flag_check.check_learner_config(_config(num_envs=64, env_batch_size=8, inference_batch_size=32))


@pytest.mark.timeout(30)
def test_sizes_given_in_transitions_may_leave_batch_size_and_unroll_length_at_zero():
  # The on-policy learner derives them from --batch_size_transitions (and checks that itself);
  # the other learners need them positive.
  flag_check.check_learner_config(_config(pg_config.PolicyGradientConfig, batch_size=0,
                                          unroll_length=0, batch_size_transitions=64))
  with pytest.raises(flag_check.FlagCheckError, match='--unroll_length must be positive'):
    flag_check.check_learner_config(_config(unroll_length=0))
  with pytest.raises(flag_check.FlagCheckError, match='--save_checkpoint_secs must be positive'):
    flag_check.check_learner_config(_config(pg_config.PolicyGradientConfig, batch_size=0,
                                            batch_size_transitions=64, save_checkpoint_secs=0))


_AGENT_CONFIG = """
import sys
from seed_rl.launch import flag_check
values = flag_check.check(sys.argv[1], ['--run_mode=learner'] + sys.argv[2:])
config = flag_check.learner_config_of(values)
print(type(config).__name__, config.batch_size, config.unroll_length)
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize('module, argv, expected', [
    # PPO sizes its batches in transitions: batch_size and unroll_length may stay 0.
    ('seed_rl.environments.gym.ppo_main', [], 'PolicyGradientConfig 0 32'),
    ('seed_rl.environments.gym.r2d2_main', ['--batch_size=8'], 'R2D2Config 8 20'),
    ('seed_rl.environments.mujoco.sac_main', [], 'SACConfig 256 1'),
])
def test_the_learner_checks_read_the_agent_s_own_config(module, argv, expected):
  result = subprocess.run([sys.executable, '-c', _AGENT_CONFIG, module, *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=110, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.splitlines()[-1] == expected


@pytest.mark.timeout(120)
@pytest.mark.parametrize('argv, message', [
    (['--env_nme=Acrobot-v1'],
     'run_local.sh: unknown flag --env_nme=Acrobot-v1 (did you mean --env_name?) of '
     'seed_rl.environments.gym.vtrace_main'),
    (['--unroll_lenght=3'], 'unknown flag --unroll_lenght=3 (did you mean --unroll_length?)'),
    (['--xyzzy'], 'unknown flag --xyzzy of seed_rl.environments.gym.vtrace_main'),
    (['--num_envs=four'], "flag --num_envs=four: invalid literal for int() with base 10: 'four'"),
    (['--discretization=cubic'], 'flag --discretization=cubic: value should be one of'),
    (['Acrobot-v1'], 'unexpected argument(s) Acrobot-v1'),
    (['--num_envs=4', '--env_batch_size=4', '--inference_batch_size=8'],
     '--inference_batch_size=8 is more than --num_envs=4 (2 x 2)'),
    (['--env_name=CartPol-v1'], 'run_local.sh: unknown --env_name=CartPol-v1 (did you mean '
                                'CartPole-v1 or '),
    # Counts that run_local.sh takes as positional arguments, not the closest flag's name
    # (--num_action_repeats, --env_batch_size: run_local.sh sets that one itself).
    (['--num_actorz=4'], 'run_local.sh: unknown flag --num_actorz=4 of '
                         'seed_rl.environments.gym.vtrace_main: the number of actors and of '
                         'environments per actor are positional: ./run_local.sh ENV AGENT '
                         'NUM_ACTORS [ENV_BATCH_SIZE]'),
    (['--env_batch_siz=4'], 'unknown flag --env_batch_siz=4 of '
                            'seed_rl.environments.gym.vtrace_main: the number of actors and of '
                            'environments per actor are positional'),
])
def test_bad_flags_are_one_line_and_status_2_in_seconds(argv, message):
  result, elapsed = _check('seed_rl.environments.gym.vtrace_main', '--run_mode=learner', *argv,
                           options=['--prefix=run_local.sh', '--shape=2 x 2'])
  assert result.returncode == 2, result.stderr
  assert message in result.stderr
  assert len(result.stderr.strip().splitlines()) == 1, result.stderr
  assert result.stdout == ''
  assert elapsed < 30, f'{elapsed:.1f} s'  # About a second on an idle machine.


@pytest.mark.timeout(120)
@pytest.mark.parametrize('module, argv, options, message', [
    ('seed_rl.environments.atari.r2d2_main', ['--game=Pongg'], ['--prefix=run_local.sh'],
     "run_local.sh: --game: Unknown Atari game 'Pongg'"),
    ('seed_rl.environments.football.vtrace_main', ['--reward_experiment=scoring,checkpoint'],
     [], 'seed_rl: unknown --reward_experiment=scoring,checkpoint (did you mean '
         'scoring,checkpoints?)'),
    ('seed_rl.environments.mujoco.sac_main', ['--env_name=Hopper-v2'], [],
     'seed_rl: --env_name: Hopper-v2 is a mujoco-py environment'),
    ('seed_rl.environments.gym.vtrace_main', ['--num_actors=4'],
     ['--prefix=seed_rl gcp: error'],
     'seed_rl gcp: error: unknown flag --num_actors=4 of seed_rl.environments.gym.vtrace_main: '
     'the actors are set by the environment variables NUM_ACTOR_MACHINES and '
     'ACTORS_PER_MACHINE'),
    # Run directly, an entry point has no positional counts: absl's closest flag.
    ('seed_rl.environments.gym.vtrace_main', ['--num_actors=4'], [],
     'seed_rl: unknown flag --num_actors=4 (did you mean --num_action_repeats?)'),
])
def test_environment_names_and_counts_are_refused_in_one_line(module, argv, options, message):
  result, _ = _check(module, '--run_mode=actor', *argv, options=options)
  assert result.returncode == 2, result.stderr
  assert result.stderr.startswith(message)
  assert len(result.stderr.strip().splitlines()) == 1, result.stderr


_OWN_ENTRY_POINT = '''
from absl import flags
flags.DEFINE_string('env_name', 'MyEnv-v0', 'An environment of its own factory.')
flags.DEFINE_string('game', 'my_game', 'A game of its own factory.')
flags.DEFINE_string('run_mode', 'actor', 'learner or actor.')
'''


@pytest.mark.timeout(120)
def test_entry_points_of_their_own_keep_their_own_environment_names(tmp_path):
  """A module outside seed_rl.environments brings its own environment factory: its names
  are not checked against Gymnasium's or the games of this package."""
  (tmp_path / 'my_own_main.py').write_text(_OWN_ENTRY_POINT)
  environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
  result = subprocess.run([sys.executable, '-m', 'seed_rl.launch.flag_check',
                           '--print=env_name,game', 'my_own_main', '--env_name=NoSuchEnv-v0',
                           '--game=Pongg'], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=110)
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines() == ['env_name=NoSuchEnv-v0', 'game=Pongg']


@pytest.mark.timeout(120)
def test_actors_skip_the_learner_checks_and_print_shows_the_parsed_flags():
  result, _ = _check('seed_rl.environments.gym.vtrace_main', '--run_mode=actor',
                     '--num_envs=2', '--inference_batch_size=8', '--job-dir=/tmp/x',
                     options=['--print=logdir,server_address,inference_batch_size'])
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines() == ['logdir=/tmp/x', 'server_address=localhost:8686',
                                        'inference_batch_size=8']


@pytest.mark.timeout(120)
def test_print_given_tells_a_flag_given_in_a_flag_file_from_a_default(tmp_path):
  """run_local.sh serves shared memory beside the default address only when --server_address
  was not given, on the command line or in a flag file."""
  flagfile = tmp_path / 'run.flags'
  flagfile.write_text('--server_address=unix:/tmp/x.sock\n')
  options = ['--print=server_address', '--print_given=server_address,logdir']
  given, _ = _check('seed_rl.environments.gym.vtrace_main', '--run_mode=learner',
                    f'--flagfile={flagfile}', options=options)
  assert given.returncode == 0, given.stderr
  assert given.stdout.splitlines() == ['server_address=unix:/tmp/x.sock',
                                       'given_server_address=1', 'given_logdir=0']
  default, _ = _check('seed_rl.environments.gym.vtrace_main', '--run_mode=learner',
                      options=options)
  assert default.stdout.splitlines() == ['server_address=localhost:8686',
                                         'given_server_address=0', 'given_logdir=0']


@pytest.mark.timeout(120)
def test_a_server_address_list_with_an_empty_item_is_one_line():
  result, _ = _check('seed_rl.environments.gym.vtrace_main', '--run_mode=learner',
                     '--server_address=localhost:8686,,shm:a')
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      "seed_rl: --server_address='localhost:8686,,shm:a' has an empty item; list addresses "
      'separated by single commas, e.g. --server_address=localhost:8686,shm:run1']


@pytest.mark.timeout(60)
def test_a_module_that_cannot_be_imported_is_status_3():
  result, _ = _check('seed_rl.environments.nowhere.vtrace_main', '--run_mode=learner')
  assert result.returncode == 3
  assert result.stderr.startswith('seed_rl: cannot import seed_rl.environments.nowhere.')
  assert len(result.stderr.strip().splitlines()) == 1


_NO_TENSORFLOW = r'''
import sys
from seed_rl.launch import flag_check
flag_check.check(sys.argv[1], ['--run_mode=learner'])
assert 'tensorflow' not in sys.modules, 'the entry point imported TensorFlow at module level'
print('ok')
'''


@pytest.mark.timeout(120)
@pytest.mark.parametrize('module', ENTRY_POINTS)
def test_every_entry_point_is_checked_without_tensorflow(module):
  """The checker relies on the entry points defining flags only at import time."""
  result = subprocess.run([sys.executable, '-c', _NO_TENSORFLOW, module], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=110)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.strip() == 'ok'
