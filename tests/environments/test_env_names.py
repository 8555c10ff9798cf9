"""seed_rl.environments.env_names: the environment names of the entry points, checked against
what each environment module accepts, without creating an environment."""

import subprocess
import sys
import types

import pytest

from seed_rl.environments import env_names

pytestmark = pytest.mark.timeout(60)


def _check(package, **flags):
  env_names.check(f'seed_rl.environments.{package}.vtrace_main', types.SimpleNamespace(**flags))


def _refusal(package, **flags):
  with pytest.raises(env_names.UnknownName) as raised:
    _check(package, **flags)
  message = str(raised.value)
  assert '\n' not in message
  return message


@pytest.mark.parametrize('package, flags, start', [
    ('gym', dict(env_name='CartPol-v1'), 'unknown --env_name=CartPol-v1 (did you mean '
                                         'CartPole-v1 or '),
    ('gym', dict(env_name='cartpole-v1'), 'unknown --env_name=cartpole-v1 (did you mean '
                                          'CartPole-v1?): not a registered Gymnasium id'),
    ('gym', dict(env_name='ale_py:ALE/Pongg-v5'), 'unknown --env_name=ale_py:ALE/Pongg-v5 (did '
                                                  'you mean ale_py:ALE/Pong-v5'),
    ('gym', dict(env_name='ALE/Pong-v5'), '--env_name=ALE/Pong-v5 is registered by ale_py, '
                                          'which the gym entry points do not import: use '
                                          '--env_name=ale_py:ALE/Pong-v5'),
    ('gym', dict(env_name='Hopper-v2'), '--env_name: Hopper-v2 is a mujoco-py environment'),
    ('mujoco', dict(env_name='Hopper-v2'), '--env_name: Hopper-v2 is a mujoco-py environment '
                                           '(the original used these ids; mujoco-py is '
                                           'unmaintained and not supported): use Hopper-v5'),
    ('mujoco', dict(env_name='toy_memory'), "--env_name: Unknown environment 'toy_memory' ("),
    # gymnasium.spec, which the mujoco env calls, wants the version.
    ('mujoco', dict(env_name='Hopper'), "--env_name: Unknown environment 'Hopper' ("),
    ('atari', dict(game='Pongg'), "--game: Unknown Atari game 'Pongg'"),
    ('atari', dict(game='Xyzzy'), "--game: Unknown Atari game 'Xyzzy'"),
    ('football', dict(game='11_vs_11_hard_stochastic', reward_experiment='scoring,checkpoint'),
     'unknown --reward_experiment=scoring,checkpoint (did you mean scoring,checkpoints?): '
     "reward_experiment must be 'scoring' or 'scoring,checkpoints'"),
    ('football', dict(game='11_vs_11_hard_stochastic', reward_experiment='goals'),
     'unknown --reward_experiment=goals: reward_experiment must be'),
    ('dmlab', dict(game='explore_goal_location_small'),
     'unknown --game=explore_goal_location_small (did you mean explore_goal_locations_small?)'),
    ('dmlab', dict(game='Rooms_Watermaze'), 'unknown --game=Rooms_Watermaze (did you mean '
                                            'rooms_watermaze?)'),
])
def test_unknown_names_are_refused_in_one_line_with_the_closest_names(package, flags, start):
  assert _refusal(package, **flags).startswith(start)


@pytest.mark.parametrize('package, flags', [
    ('gym', dict(env_name='CartPole-v1')),
    ('gym', dict(env_name='CartPole')),  # gymnasium.make takes the newest version.
    ('gym', dict(env_name='ale_py:ALE/Pong-v5')),
    ('gym', dict(env_name='my_package:MyEnv-v0')),  # The user's module registers it.
    ('mujoco', dict(env_name='HalfCheetah-v5')),
    ('mujoco', dict(env_name='Pendulum-v1')),
    ('mujoco', dict(env_name='bit_flip')),
    ('atari', dict(game='Breakout')),
    ('atari', dict(game='MsPacman')),
    ('football', dict(game='academy_empty_goal_close', reward_experiment='scoring')),
    ('football', dict(game='11_vs_11_hard_stochastic', reward_experiment='scoring,checkpoints')),
    ('dmlab', dict(game='explore_goal_locations_small')),
    ('dmlab', dict(game='seekavoid_arena_01')),
    ('dmlab', dict(game='contributed/dmlab30/rooms_watermaze')),
    # Levels the list does not have pass to the engine, as the env passes them.
    ('dmlab', dict(game='my_own_level')),
    ('dmlab', dict(game='nav_maze_static_04')),
])
def test_names_the_environment_modules_accept_pass(package, flags):
  _check(package, **flags)


@pytest.mark.parametrize('package, flags', [
    ('mujoco', dict(env_name='toy_memory')),
    ('mujoco', dict(env_name='Hopper')),
    ('mujoco', dict(env_name='Hopper-v2')),
    ('gym', dict(env_name='HalfCheetah-v3')),  # A MuJoCo id of the gym entry points.
    ('atari', dict(game='Pongg')),
    ('atari', dict(game='pong')),
])
def test_names_are_refused_by_the_environment_module_s_own_check(package, flags):
  """The launcher refuses with the text of the environment's error, so that both suggest the
  same names."""
  (flag, value), = flags.items()
  if package == 'atari':
    from seed_rl.environments.atari import env  # pylint: disable=g-import-not-at-top
    check = env.check_game_name
  else:
    from seed_rl.environments.mujoco import env  # pylint: disable=g-import-not-at-top
    check = env.check_env_name
  with pytest.raises(ValueError) as raised:
    check(value)
  assert _refusal(package, **flags) == f'--{flag}: {raised.value}'


def test_only_this_packages_entry_points_are_checked():
  values = types.SimpleNamespace(env_name='NoSuchEnv-v0', game='NoSuchGame')
  env_names.check('my_project.vtrace_main', values)
  env_names.check('seed_rl.environments.elsewhere.vtrace_main', values)
  with pytest.raises(env_names.UnknownName):
    env_names.check('seed_rl.environments.gym.r2d2_main', values)


def test_football_scenarios_are_read_from_the_installed_package_files(tmp_path, monkeypatch):
  """Without importing gfootball (its engine): the modules of its `scenarios` package, as
  gfootball's own scenario_builder.all_scenarios() lists them."""
  scenarios = tmp_path / 'gfootball' / 'scenarios'
  scenarios.mkdir(parents=True)
  (tmp_path / 'gfootball' / '__init__.py').write_text('raise ImportError("not to be imported")\n')
  for name in ('__init__', '11_vs_11_easy_stochastic', 'academy_empty_goal_close'):
    (scenarios / f'{name}.py').write_text('')
  monkeypatch.syspath_prepend(str(tmp_path))
  # A gfootball another test imported would be found first (find_spec reads sys.modules).
  for name in [name for name in sys.modules if name.split('.')[0] == 'gfootball']:
    monkeypatch.delitem(sys.modules, name)
  env_names.football_scenarios.cache_clear()
  try:
    assert env_names.football_scenarios() == ('11_vs_11_easy_stochastic',
                                              'academy_empty_goal_close')
    message = _refusal('football', game='academy_empty_goal', reward_experiment='scoring')
    assert message.startswith('unknown --game=academy_empty_goal (did you mean '
                              'academy_empty_goal_close?): not a scenario of the installed '
                              'gfootball (2 scenarios')
    _check('football', game='academy_empty_goal_close', reward_experiment='scoring')
  finally:
    env_names.football_scenarios.cache_clear()


def test_checks_import_no_tensorflow_and_only_the_checked_environment_module():
  program = ('import sys, types\n'
             'from seed_rl.environments import env_names\n'
             "env_names.check('seed_rl.environments.gym.vtrace_main', "
             "types.SimpleNamespace(env_name='CartPole-v1'))\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow' or "
             "m.startswith('seed_rl.environments.')))\n")
  result = subprocess.run([sys.executable, '-c', program], capture_output=True, text=True,
                          check=True)
  assert result.stdout.strip() == "['seed_rl.environments.env_names']"
