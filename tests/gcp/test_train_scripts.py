"""gcp/train_<scenario>.sh and gcp/setup.sh: the Vertex AI CustomJob specs they write.

Every script runs with --dry-run from the repository root, with a PATH that has neither gcloud
nor docker (only the few tools the scripts use), so the tests also prove that a dry run calls
neither. The spec must parse and have what a CustomJob needs: two worker pools (the learner
with an accelerator, the actor machines), the image, gcp/run.py as the command with its flags,
and the scenario's hyper-parameters of the original after `--`.
"""

import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: The only programs a dry run may use (everything else is a bash builtin).
DRY_RUN_TOOLS = ('bash', 'date', 'mkdir', 'dirname', 'basename', 'sed', 'cat')

#: script -> (environment, agent, learner machine, accelerators, actor machines, actors each,
#:            the scenario's flags in order).
SCENARIOS = {
    'train_atari.sh': ('atari', 'r2d2', 'n1-highmem-32', 2, 32, 20, [
        '--game=Pong', '--inference_batch_size=32', '--batch_size=64',
        '--replay_buffer_min_size=5000', '--replay_buffer_size=100000',
        '--total_environment_frames=50e9', '--replay_ratio=0.75', '--unroll_length=80',
        '--learning_rate=1e-4', '--num_eval_envs=30', '--burn_in=40', '--clip_norm=80']),
    'train_dmlab_explore_goal_locations_small.sh': ('dmlab', 'vtrace', 'n1-standard-8', 1, 50, 8, [
        '--game=explore_goal_locations_small', '--inference_batch_size=64', '--batch_size=32',
        '--entropy_cost=0.0009705614902108625', '--lambda_=0.95',
        '--learning_rate=0.00022587896096859582', '--adam_epsilon=3.125e-9',
        '--max_abs_reward=1']),
    'train_dmlab_lasertag_three_opponents_small.sh': ('dmlab', 'vtrace', 'n1-standard-8', 1, 50, 8, [
        '--game=lasertag_three_opponents_small', '--inference_batch_size=64', '--batch_size=32',
        '--entropy_cost=0.0013043623417080615', '--lambda_=0.9',
        '--learning_rate=0.000398313170083425', '--adam_epsilon=3.125e-11',
        '--max_abs_reward=1']),
    'train_dmlab_rooms_keys_doors_puzzle.sh': ('dmlab', 'vtrace', 'n1-standard-8', 1, 50, 8, [
        '--game=rooms_keys_doors_puzzle', '--inference_batch_size=64', '--batch_size=32',
        '--entropy_cost=0.002', '--lambda_=0.922', '--learning_rate=1e-4',
        '--adam_epsilon=3.125e-11', '--max_abs_reward=1']),
    'train_dmlab_rooms_watermaze.sh': ('dmlab', 'vtrace', 'n1-standard-8', 1, 50, 8, [
        '--game=rooms_watermaze', '--inference_batch_size=64', '--batch_size=32',
        '--entropy_cost=1e-5', '--lambda_=0.99', '--learning_rate=1e-4',
        '--adam_epsilon=3.125e-7', '--max_abs_reward=1']),
    'train_football_scoring.sh': ('football', 'vtrace', 'n1-standard-8', 1, 25, 8, [
        '--game=11_vs_11_hard_stochastic', '--reward_experiment=scoring',
        '--inference_batch_size=64', '--batch_size=32', '--unroll_length=32',
        '--total_environment_frames=5e8', '--discounting=0.997', '--entropy_cost=3.1948e-5',
        '--lambda_=0.9', '--learning_rate=5.5339e-5']),
    'train_football_checkpoints.sh': ('football', 'vtrace', 'n1-standard-8', 1, 25, 8, [
        '--game=11_vs_11_hard_stochastic', '--reward_experiment=scoring,checkpoints',
        '--inference_batch_size=64', '--batch_size=32', '--unroll_length=32',
        '--total_environment_frames=5e8', '--discounting=0.997', '--entropy_cost=7.3309e-4',
        '--lambda_=1', '--learning_rate=1.2542e-4']),
    # The original's PPO on HalfCheetah (-v2 there, Gymnasium's -v5 here), 4 machines x 1 actor;
    # its --gin_config (the packaged ppo.gin, our default) and --batches_per_step=0 (here the
    # default, 1, leaves the step to --step_size_transitions) are left out.
    'train_mujoco.sh': ('mujoco', 'ppo', 'n1-standard-8', 1, 4, 1, [
        '--env_name=HalfCheetah-v5', '--total_environment_frames=2000000', '--batch_mode=split',
        '--epochs_per_step=10', '--lr_decay_multiplier=0', '--step_size_transitions=2048',
        '--batch_size_transitions=64', '--unroll_length=16', '--learning_rate=3e-4',
        '--clip_norm=0.5', '--batch_size=0']),
}
#: The other agents of gcp/train_mujoco.sh: MUJOCO_AGENT -> (actor machines, actors each,
#: flags).
MUJOCO_AGENTS = {
    'sac': (4, 4, ['--env_name=HalfCheetah-v5', '--learning_rate=3e-4', '--batch_size=256',
                   '--unroll_length=1', '--replay_buffer_size=1000000', '--replay_ratio=4',
                   '--discounting=0.99', '--polyak=0.995', '--entropy_cost=0.01',
                   '--target_entropy=-6', '--total_environment_frames=3e6']),
    'vtrace': (4, 4, ['--env_name=HalfCheetah-v5', '--learning_rate=3e-4',
                      '--normalize_observations', '--batch_size=32', '--unroll_length=64',
                      '--total_environment_frames=1e7']),
}
#: Variables of the caller that would change the specs.
CONFIG_VARIABLES = ('PROJECT_ID', 'REGION', 'REPOSITORY', 'BUCKET', 'IMAGE_URI', 'SKIP_BUILD',
                    'JOB_NAME', 'SPEC_DIR', 'SERVICE_ACCOUNT', 'JOB_TIMEOUT', 'STREAM_LOGS',
                    'LEARNER_MACHINE_TYPE', 'LEARNER_ACCELERATOR_TYPE',
                    'LEARNER_ACCELERATOR_COUNT', 'ACTOR_MACHINE_TYPE', 'NUM_ACTOR_MACHINES',
                    'ACTORS_PER_MACHINE', 'ENV_BATCH_SIZE', 'MUJOCO_AGENT')


def _entry_point_exists(environment, agent):
  return (ROOT / 'seed_rl' / 'environments' / environment / f'{agent}_main.py').is_file()


@pytest.fixture
def bare_path(tmp_path):
  """A PATH directory with only DRY_RUN_TOOLS: no gcloud, no docker."""
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  for tool in DRY_RUN_TOOLS:
    location = shutil.which(tool)
    assert location, f'{tool} is needed by the test'
    (bin_dir / tool).symlink_to(location)
  assert shutil.which('gcloud', path=str(bin_dir)) is None
  assert shutil.which('docker', path=str(bin_dir)) is None
  return str(bin_dir)


def _run(script, *args, path, tmp_path, env=None, timeout=60):
  environment = {k: v for k, v in os.environ.items() if k not in CONFIG_VARIABLES}
  environment.update(PATH=path, HOME=str(tmp_path), SPEC_DIR=str(tmp_path / 'specs'))
  environment.update(env or {})
  return subprocess.run([f'gcp/{script}'] + list(args), cwd=ROOT, env=environment,
                        capture_output=True, text=True, timeout=timeout)


def _spec(tmp_path):
  specs = sorted((tmp_path / 'specs').glob('*.yaml'))
  assert len(specs) == 1, specs
  return specs[0], yaml.safe_load(specs[0].read_text())


def _args(pool):
  container = pool['containerSpec']
  assert container['command'] == ['python3', '/seed_rl/gcp/run.py']
  args = container['args']
  separator = args.index('--')
  return args[:separator], args[separator + 1:]


#: The scripts that take the scenario as an argument: script -> (argument, the scenario's own
#: script) for each scenario, the default first.
GENERIC_SCRIPTS = {
    'train_football.sh': [(None, 'train_football_scoring.sh'),
                          ('scoring', 'train_football_scoring.sh'),
                          ('checkpoints', 'train_football_checkpoints.sh')],
    'train_dmlab.sh': [(None, 'train_dmlab_explore_goal_locations_small.sh')] + [
        (level, f'train_dmlab_{level}.sh') for level in (
            'explore_goal_locations_small', 'lasertag_three_opponents_small',
            'rooms_keys_doors_puzzle', 'rooms_watermaze')],
}


@pytest.mark.timeout(30)
def test_there_is_a_train_script_per_scenario_of_the_original():
  scripts = sorted(p.name for p in (ROOT / 'gcp').glob('train_*.sh'))
  assert scripts == sorted(list(SCENARIOS) + list(GENERIC_SCRIPTS))


@pytest.mark.timeout(30)
@pytest.mark.parametrize('script', sorted(GENERIC_SCRIPTS))
def test_the_scenario_scripts_are_thin_wrappers_of_the_generic_ones(script):
  """One place holds a scenario's settings: its own script only calls the generic one."""
  for argument, wrapper in GENERIC_SCRIPTS[script]:
    if argument is None:
      continue
    lines = [line for line in (ROOT / 'gcp' / wrapper).read_text().splitlines()
             if line.strip() and not line.startswith('#')]
    assert lines == [f'exec "$(dirname "$0")/{script}" {argument} "$@"'], wrapper


def _scenario_cases():
  return [(script, argument, wrapper) for script, cases in sorted(GENERIC_SCRIPTS.items())
          for argument, wrapper in cases]


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script, argument, wrapper', _scenario_cases())
def test_generic_script_writes_the_spec_of_its_scenario(script, argument, wrapper, tmp_path,
                                                       bare_path):
  environment, agent, learner_machine, accelerators, machines, actors, hparams = (
      SCENARIOS[wrapper])
  # The scenario may come before or after the options.
  args = ['--dry-run'] + ([argument] if argument else [])
  result = _run(script, *args, path=bare_path, tmp_path=tmp_path)
  assert result.returncode == 0, result.stdout + result.stderr
  spec_file, spec = _spec(tmp_path)
  assert spec_file.name.startswith(f'seed_rl_{wrapper[len("train_"):-len(".sh")]}_')
  learner, actor = spec['workerPoolSpecs']
  assert learner['machineSpec']['machineType'] == learner_machine
  assert learner['machineSpec']['acceleratorCount'] == accelerators
  assert actor['replicaCount'] == machines
  own, forwarded = _args(learner)
  assert own == [f'--environment={environment}', f'--agent={agent}', f'--workers={machines}',
                 f'--actors_per_worker={actors}', '--env_batch_size=1']
  assert forwarded[1:] == hparams


@pytest.mark.timeout(60)
def test_generic_script_takes_the_scenario_after_the_options_and_refuses_unknown_ones(
    tmp_path, bare_path):
  result = _run('train_football.sh', '--dry-run', 'checkpoints', '--seed=3', path=bare_path,
                tmp_path=tmp_path)
  assert result.returncode == 0, result.stdout + result.stderr
  _, forwarded = _args(_spec(tmp_path)[1]['workerPoolSpecs'][0])
  assert '--reward_experiment=scoring,checkpoints' in forwarded and forwarded[-1] == '--seed=3'
  for script, scenario, message in [
      ('train_football.sh', 'corner', "unknown football scenario 'corner'"),
      ('train_dmlab.sh', 'seekavoid_arena_01', "no tuned scenario for the DeepMind Lab level "
                                               "'seekavoid_arena_01'")]:
    result = _run(script, scenario, '--dry-run', path=bare_path, tmp_path=tmp_path / script)
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / script / 'specs').exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script, args, env, scenario, example', [
    ('train_football.sh', ['--help'], {}, 'football vtrace on Vertex AI, scenario '
     'football_scoring', 'gcp/train_football.sh scoring --dry-run '
     '--game=academy_empty_goal_close'),
    ('train_football.sh', ['checkpoints', '-h'], {}, 'scenario football_checkpoints',
     'gcp/train_football.sh checkpoints --dry-run --game=academy_empty_goal_close'),
    ('train_football_checkpoints.sh', ['--help'], {}, 'scenario football_checkpoints',
     'gcp/train_football.sh checkpoints --dry-run'),
    ('train_dmlab.sh', ['rooms_watermaze', '--help'], {}, 'scenario dmlab_rooms_watermaze',
     'gcp/train_dmlab.sh rooms_watermaze --dry-run --game='),
    ('train_atari.sh', ['--help'], {}, 'atari r2d2 on Vertex AI, scenario atari',
     'gcp/train_atari.sh --dry-run --game=Breakout'),
    ('train_mujoco.sh', ['--help'], {}, 'mujoco ppo on Vertex AI, scenario mujoco_ppo',
     'gcp/train_mujoco.sh --dry-run --env_name=Hopper-v5'),
    ('train_mujoco.sh', ['--help'], {'MUJOCO_AGENT': 'vtrace'}, 'scenario mujoco_vtrace',
     'gcp/train_mujoco.sh --dry-run --env_name=Hopper-v5'),
])
def test_help_shows_the_scripts_own_usage_and_exits_0(script, args, env, scenario, example,
                                                      tmp_path, bare_path):
  result = _run(script, *args, path=bare_path, tmp_path=tmp_path, env=env)
  assert result.returncode == 0, result.stdout + result.stderr
  assert result.stderr == ''
  lines = result.stdout.splitlines()
  assert lines[0].startswith('Usage: gcp/')
  assert scenario in result.stdout
  assert lines[-2] == 'Example:' and lines[-1].startswith(f'  {example}'), lines[-2:]
  if 'football' in script:
    assert lines[0] == 'Usage: gcp/train_football.sh [scoring|checkpoints] [--dry-run] ' \
                       '[--flag=value ...]'
    assert 'Breakout' not in result.stdout and '--game=11_vs_11_hard_stochastic' in result.stdout
  assert not (tmp_path / 'specs').exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script, args, env, message', [
    ('train_atari.sh', ['--gme=Breakout'], {},
     'seed_rl gcp: error: unknown flag --gme=Breakout (did you mean --game?) of '
     'seed_rl.environments.atari.r2d2_main'),
    ('train_football.sh', ['checkpoints', '--unroll_lenght=8'], {},
     'unknown flag --unroll_lenght=8 (did you mean --unroll_length?)'),
    ('train_atari.sh', ['--batch_size=many'], {}, 'flag --batch_size=many: invalid literal'),
    # The scenario's --inference_batch_size=32 is not a whole number of actor calls of 3 envs.
    ('train_atari.sh', [], {'ENV_BATCH_SIZE': '3'},
     '--inference_batch_size=32 must be a multiple of --env_batch_size=3'),
    # 1 x 2 x 1 environments cannot fill the scenario's inference batches of 64.
    ('train_dmlab.sh', [], {'NUM_ACTOR_MACHINES': '1', 'ACTORS_PER_MACHINE': '2'},
     '--inference_batch_size=64 is more than --num_envs=2 (NUM_ACTOR_MACHINES x '
     'ACTORS_PER_MACHINE x ENV_BATCH_SIZE = 1 x 2 x 1)'),
    ('train_football.sh', ['--reward_experiment=scoring,checkpoint'], {},
     'seed_rl gcp: error: unknown --reward_experiment=scoring,checkpoint (did you mean '
     'scoring,checkpoints?)'),
    ('train_atari.sh', ['--game=Pongg'], {},
     "seed_rl gcp: error: --game: Unknown Atari game 'Pongg'"),
    # The actors are counted by the machine shape's variables, not by a flag.
    ('train_atari.sh', ['--num_actors=640'], {},
     'seed_rl gcp: error: unknown flag --num_actors=640 of seed_rl.environments.atari.r2d2_main:'
     ' the actors are set by the environment variables NUM_ACTOR_MACHINES and '
     'ACTORS_PER_MACHINE'),
])
def test_bad_flags_fail_the_dry_run_in_seconds_with_one_line(script, args, env, message,
                                                            tmp_path, bare_path):
  """The flags are checked against the entry point before anything is built or written."""
  start = time.monotonic()
  result = _run(script, '--dry-run', *args, path=bare_path, tmp_path=tmp_path, env=env)
  elapsed = time.monotonic() - start
  assert result.returncode == 2, result.stdout + result.stderr
  assert result.stderr.strip().splitlines()[-1].startswith('seed_rl gcp: error: ')
  assert message in result.stderr
  assert 'Traceback' not in result.stderr
  assert elapsed < 15, f'{elapsed:.1f} s'  # About a second on an idle machine.
  assert not (tmp_path / 'specs').exists()
  assert 'docker/build.sh' not in result.stdout


@pytest.mark.timeout(60)
def test_without_a_python_that_can_check_them_the_flags_are_not_checked(tmp_path, bare_path):
  result = _run('train_atari.sh', '--dry-run', '--gme=Breakout', path=bare_path,
                tmp_path=tmp_path, env={'SEED_RL_VENV': str(tmp_path / 'no_venv')})
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'flags not checked here' in result.stderr
  _spec(tmp_path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script', sorted(SCENARIOS))
def test_dry_run_writes_a_custom_job_spec_and_calls_no_gcloud(script, tmp_path, bare_path):
  environment, agent, learner_machine, accelerators, machines, actors, hparams = (
      SCENARIOS[script])
  result = _run(script, '--dry-run', path=bare_path, tmp_path=tmp_path)
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'command not found' not in result.stderr
  spec_file, spec = _spec(tmp_path)

  pools = spec['workerPoolSpecs']
  assert len(pools) == 2
  learner, actor = pools
  assert learner['replicaCount'] == 1
  assert learner['machineSpec']['machineType'] == learner_machine
  assert learner['machineSpec']['acceleratorType'].startswith('NVIDIA_')
  assert learner['machineSpec']['acceleratorCount'] == accelerators
  assert actor['replicaCount'] == machines > 0
  assert actor['machineSpec']['machineType'] == 'n1-standard-4'
  assert 'acceleratorType' not in actor['machineSpec']
  image = f'us-central1-docker.pkg.dev/your-project-id/seed-rl/seed_rl:{environment}'
  for pool in pools:
    assert pool['containerSpec']['imageUri'] == image
    assert pool['containerSpec'] == learner['containerSpec']

  own, forwarded = _args(learner)
  assert own == [f'--environment={environment}', f'--agent={agent}', f'--workers={machines}',
                 f'--actors_per_worker={actors}', '--env_batch_size=1']
  job_dir = spec['baseOutputDirectory']['outputUriPrefix']
  assert job_dir.startswith('gs://your-project-id-seed-rl/seed_rl_')
  assert forwarded == [f'--logdir={job_dir}'] + hparams
  assert not any(a.startswith('--num_eval_actors') for a in forwarded)

  # The dry run prints the spec and the commands it would run.
  assert 'DRY RUN' in result.stdout
  assert 'workerPoolSpecs:' in result.stdout
  assert f'docker/build.sh {environment}' in result.stdout
  assert (f'+ gcloud ai custom-jobs create --project=your-project-id --region=us-central1 '
          f'--display-name={spec_file.stem} --config={spec_file}') in result.stdout


@pytest.mark.timeout(60)
def test_configuration_comes_from_environment_variables(tmp_path, bare_path):
  # A flag of the entry point with quotes and a backslash in its value.
  odd = '--init_checkpoint=a "quoted" back\\slash'
  # 3 x 2 x 4 = 24 environments: inference batches of the scenario's 64 could never fill.
  result = _run('train_football_scoring.sh', '--dry-run', '--inference_batch_size=8',
                '--game=academy_empty_goal_close', odd, path=bare_path, tmp_path=tmp_path, env={
                    'PROJECT_ID': 'my-project', 'REGION': 'europe-west4', 'BUCKET': 'gs://b1/',
                    'JOB_NAME': 'football_try', 'SERVICE_ACCOUNT': 'sa@my-project.iam',
                    'JOB_TIMEOUT': '86400s', 'LEARNER_ACCELERATOR_TYPE': 'NVIDIA_L4',
                    'LEARNER_MACHINE_TYPE': 'g2-standard-8', 'NUM_ACTOR_MACHINES': '3',
                    'ACTORS_PER_MACHINE': '2', 'ENV_BATCH_SIZE': '4', 'SKIP_BUILD': '1'})
  assert result.returncode == 0, result.stdout + result.stderr
  spec_file, spec = _spec(tmp_path)
  assert spec_file.name == 'football_try.yaml'
  learner, actor = spec['workerPoolSpecs']
  assert learner['machineSpec'] == {'machineType': 'g2-standard-8',
                                    'acceleratorType': 'NVIDIA_L4', 'acceleratorCount': 1}
  assert actor['replicaCount'] == 3
  assert (learner['containerSpec']['imageUri'] ==
          'europe-west4-docker.pkg.dev/my-project/seed-rl/seed_rl:football')
  own, forwarded = _args(actor)
  assert own[2:] == ['--workers=3', '--actors_per_worker=2', '--env_batch_size=4']
  assert forwarded[0] == '--logdir=gs://b1/football_try'
  # Extra flags come last (absl: the last value wins), quotes and backslashes intact.
  assert forwarded[-3:] == ['--inference_batch_size=8', '--game=academy_empty_goal_close', odd]
  assert spec['baseOutputDirectory'] == {'outputUriPrefix': 'gs://b1/football_try'}
  assert spec['serviceAccount'] == 'sa@my-project.iam'
  assert spec['scheduling'] == {'timeout': '86400s'}
  assert 'SKIP_BUILD=1' in result.stdout and 'docker/build.sh' not in result.stdout


@pytest.mark.timeout(60)
def test_no_accelerator_when_the_count_is_zero_and_a_custom_image(tmp_path, bare_path):
  result = _run('train_atari.sh', '--dry-run', path=bare_path, tmp_path=tmp_path,
                env={'LEARNER_ACCELERATOR_COUNT': '0', 'IMAGE_URI': 'example.com/seed:1'})
  assert result.returncode == 0, result.stdout + result.stderr
  learner, _ = _spec(tmp_path)[1]['workerPoolSpecs']
  assert learner['machineSpec'] == {'machineType': 'n1-highmem-32'}
  assert learner['containerSpec']['imageUri'] == 'example.com/seed:1'


@pytest.mark.timeout(60)
@pytest.mark.parametrize('args, env, message', [
    (['--dry-run', '--num_envs=8'], {}, '--num_envs=8 is set by gcp/run.py'),
    (['--dry-run', '--task=1'], {}, 'is set by gcp/run.py'),
    (['--dry-run', 'Pong'], {}, "unexpected argument 'Pong'"),
    (['--dry-run'], {'NUM_ACTOR_MACHINES': '0'}, 'NUM_ACTOR_MACHINES must be an integer >= 1'),
    (['--dry-run'], {'ENV_BATCH_SIZE': 'x'}, 'ENV_BATCH_SIZE must be an integer >= 1'),
])
def test_bad_arguments_are_refused_before_anything_runs(args, env, message, tmp_path,
                                                          bare_path):
  result = _run('train_atari.sh', *args, path=bare_path, tmp_path=tmp_path, env=env)
  assert result.returncode != 0
  assert message in result.stderr
  assert not (tmp_path / 'specs').exists()


@pytest.mark.timeout(60)
def test_a_real_run_needs_gcloud_and_says_so(tmp_path, bare_path):
  result = _run('train_atari.sh', path=bare_path, tmp_path=tmp_path)
  assert result.returncode != 0
  assert 'gcloud is not installed' in result.stderr
  assert not (tmp_path / 'specs').exists()


@pytest.mark.timeout(60)
def test_setup_dry_run_prints_the_one_time_setup(tmp_path, bare_path):
  result = _run('setup.sh', '--dry-run', path=bare_path, tmp_path=tmp_path,
                env={'PROJECT_ID': 'p1', 'REGION': 'us-east1'})
  assert result.returncode == 0, result.stdout + result.stderr
  out = result.stdout
  assert ('+ gcloud services enable aiplatform.googleapis.com artifactregistry.googleapis.com '
          'storage.googleapis.com --project=p1') in out
  assert ('gcloud artifacts repositories create seed-rl --project=p1 --location=us-east1 '
          '--repository-format=docker') in out
  assert 'gcloud storage buckets create gs://p1-seed-rl --project=p1 --location=us-east1' in out
  assert '+ gcloud auth configure-docker us-east1-docker.pkg.dev --quiet' in out


# The entry points must define every flag a scenario passes (the original's train_atari.sh
# passed `num_eval_actors`, which does not exist). One process per entry point: absl flags are
# global, and each entry point imports TensorFlow once.
_CHECK_FLAGS = r'''
import importlib, sys
from absl import flags
importlib.import_module(sys.argv[1])
for line in sys.stdin.read().split('\n\n'):
  flags.FLAGS.unparse_flags()
  flags.FLAGS(['main'] + line.split('\n'))
print('all flags parsed')
'''


def _check_flags(environment, agent, argument_lists):
  """Parses every argument list with the flags of the entry point ENVIRONMENT.AGENT_main."""
  environment_vars = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONPATH=str(ROOT))
  result = subprocess.run(
      [sys.executable, '-c', _CHECK_FLAGS, f'seed_rl.environments.{environment}.{agent}_main'],
      input='\n\n'.join(argument_lists), cwd=ROOT, env=environment_vars, capture_output=True,
      text=True, timeout=170)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'all flags parsed' in result.stdout


@pytest.mark.timeout(180)
@pytest.mark.parametrize('environment, agent', [('atari', 'r2d2'), ('dmlab', 'vtrace'),
                                                ('football', 'vtrace'), ('mujoco', 'ppo')])
def test_the_entry_point_defines_every_flag_of_its_scenarios(environment, agent, tmp_path,
                                                              bare_path):
  if not _entry_point_exists(environment, agent):
    pytest.skip(f'seed_rl/environments/{environment}/{agent}_main.py does not exist yet')
  argument_lists = []
  for script, scenario in sorted(SCENARIOS.items()):
    if scenario[:2] != (environment, agent):
      continue
    run_dir = tmp_path / script
    run_dir.mkdir()
    result = _run(script, '--dry-run', path=bare_path, tmp_path=run_dir)
    assert result.returncode == 0, result.stderr
    argument_lists.append('\n'.join(_args(_spec(run_dir)[1]['workerPoolSpecs'][0])[1]))
  assert argument_lists
  _check_flags(environment, agent, argument_lists)


@pytest.mark.timeout(180)
@pytest.mark.parametrize('mujoco_agent', sorted(MUJOCO_AGENTS))
def test_train_mujoco_runs_the_agent_mujoco_agent_names(mujoco_agent, tmp_path, bare_path):
  machines, actors, hparams = MUJOCO_AGENTS[mujoco_agent]
  result = _run('train_mujoco.sh', '--dry-run', path=bare_path, tmp_path=tmp_path,
                env={'MUJOCO_AGENT': mujoco_agent})
  assert result.returncode == 0, result.stdout + result.stderr
  spec_file, spec = _spec(tmp_path)
  assert spec_file.name.startswith(f'seed_rl_mujoco_{mujoco_agent}_')
  learner, actor = spec['workerPoolSpecs']
  assert learner['machineSpec'] == {'machineType': 'n1-standard-8',
                                    'acceleratorType': 'NVIDIA_TESLA_P100', 'acceleratorCount': 1}
  assert learner['containerSpec']['imageUri'].endswith('/seed_rl:mujoco')
  assert actor['replicaCount'] == machines
  own, forwarded = _args(learner)
  assert own == ['--environment=mujoco', f'--agent={mujoco_agent}', f'--workers={machines}',
                 f'--actors_per_worker={actors}', '--env_batch_size=1']
  assert forwarded[1:] == hparams
  assert actor['containerSpec'] == learner['containerSpec']
  _check_flags('mujoco', mujoco_agent, ['\n'.join(forwarded)])


def _run_py_commands(pool, machines, task_type, index):
  """The commands `gcp/run.py --dry_run` makes of a pool's container args, on a host of task
  TASK_TYPE INDEX of a Vertex AI cluster of one learner and MACHINES actor machines."""
  cluster = {'workerpool0': ['learner-0:2222'],
             'workerpool1': [f'actor-{i}:2222' for i in range(machines)]}
  tf_config = json.dumps({'cluster': cluster, 'task': {'type': task_type, 'index': index}})
  args = list(pool['containerSpec']['args'])
  args.insert(args.index('--'), '--dry_run')
  run = subprocess.run([sys.executable, str(ROOT / 'gcp' / 'run.py')] + args, cwd=ROOT,
                       env=dict(os.environ, TF_CONFIG=tf_config), capture_output=True,
                       text=True, timeout=60)
  assert run.returncode == 0, run.stderr[-3000:]
  return [shlex.split(line) for line in run.stdout.splitlines() if line.strip()]


# The training configuration a PPO learner derives from its command line, as JSON.
_PPO_TRAINING_CONFIG = r'''
import dataclasses, importlib, json, sys
from absl import flags
importlib.import_module(sys.argv[1])
from seed_rl.agents.policy_gradient import learner_flags
flags.FLAGS(['main'] + sys.argv[2:])
config = learner_flags.training_config_from_flags(flags.FLAGS)
print(json.dumps(dict(dataclasses.asdict(config), learning_rate=flags.FLAGS.learning_rate,
                      lr_decay_multiplier=flags.FLAGS.lr_decay_multiplier,
                      total_environment_frames=flags.FLAGS.total_environment_frames,
                      env_name=flags.FLAGS.env_name, gin_config=flags.FLAGS.gin_config)))
'''


@pytest.mark.timeout(120)
def test_train_mujoco_ppo_learner_trains_in_the_steps_of_the_original(tmp_path, bare_path):
  """The learner command gcp/run.py makes of the default spec, parsed by ppo_main as the learner
  parses it: steps of 2048 transitions (32 minibatches of 4 unrolls of 16), 10 epochs."""
  result = _run('train_mujoco.sh', '--dry-run', path=bare_path, tmp_path=tmp_path)
  assert result.returncode == 0, result.stdout + result.stderr
  learner_pool, _ = _spec(tmp_path)[1]['workerPoolSpecs']
  (learner,) = _run_py_commands(learner_pool, 4, 'workerpool0', 0)
  module = learner[learner.index('-m') + 1]
  assert module == 'seed_rl.environments.mujoco.ppo_main'
  parsed = subprocess.run(
      [sys.executable, '-c', _PPO_TRAINING_CONFIG, module] + learner[learner.index('-m') + 2:],
      cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
      timeout=60)
  assert parsed.returncode == 0, parsed.stderr[-3000:]
  config = json.loads(parsed.stdout.strip().splitlines()[-1])
  assert {key: config[key] for key in (
      'unroll_length', 'batch_size', 'batches_per_step', 'epochs_per_step', 'batch_mode',
      'clip_norm', 'learning_rate', 'lr_decay_multiplier', 'total_environment_frames',
      'env_name', 'gin_config')} == {
          'unroll_length': 16, 'batch_size': 4, 'batches_per_step': 32, 'epochs_per_step': 10,
          'batch_mode': 'split', 'clip_norm': 0.5, 'learning_rate': 3e-4,
          'lr_decay_multiplier': 0, 'total_environment_frames': 2e6,
          'env_name': 'HalfCheetah-v5', 'gin_config': None}


@pytest.mark.timeout(60)
def test_train_mujoco_refuses_an_agent_it_has_no_flags_for(tmp_path, bare_path):
  result = _run('train_mujoco.sh', '--dry-run', path=bare_path, tmp_path=tmp_path,
                env={'MUJOCO_AGENT': 'r2d2'})
  assert result.returncode != 0
  assert "MUJOCO_AGENT must be ppo, sac or vtrace, got 'r2d2'" in result.stderr
  assert not (tmp_path / 'specs').exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize('script, mujoco_agent', [('train_atari.sh', None),
                                                  ('train_football_scoring.sh', None),
                                                  ('train_mujoco.sh', None),
                                                  ('train_mujoco.sh', 'sac'),
                                                  ('train_mujoco.sh', 'vtrace')])
def test_the_spec_starts_the_learner_and_the_actors_through_run_py(script, mujoco_agent,
                                                                   tmp_path, bare_path):
  """The container args of a spec, given to gcp/run.py with the TF_CONFIG Vertex AI sets."""
  environment, agent, _, _, machines, actors, _ = SCENARIOS[script]
  if mujoco_agent:
    agent = mujoco_agent
    machines, actors, _ = MUJOCO_AGENTS[mujoco_agent]
  if not _entry_point_exists(environment, agent):
    pytest.skip(f'seed_rl/environments/{environment}/{agent}_main.py does not exist yet')
  result = _run(script, '--dry-run', path=bare_path, tmp_path=tmp_path,
                env={'MUJOCO_AGENT': mujoco_agent} if mujoco_agent else None)
  assert result.returncode == 0, result.stderr
  learner_pool, actor_pool = _spec(tmp_path)[1]['workerPoolSpecs']
  num_envs = f'--num_envs={machines * actors}'
  (learner,) = _run_py_commands(learner_pool, machines, 'workerpool0', 0)
  assert '--run_mode=learner' in learner and '--server_address=[::]:2222' in learner
  assert f'seed_rl.environments.{environment}.{agent}_main' in learner
  assert num_envs in learner
  last_host = _run_py_commands(actor_pool, machines, 'workerpool1', machines - 1)
  assert len(last_host) == actors
  tasks = sorted(int(a.split('=')[1]) for c in last_host for a in c if a.startswith('--task='))
  assert tasks == list(range((machines - 1) * actors, machines * actors))
  for command in last_host:
    assert '--run_mode=actor' in command and num_envs in command
    assert '--server_address=learner-0:2222' in command
