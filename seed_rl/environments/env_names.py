"""Checks the environment names of this package's entry points, without creating environments.

  check('seed_rl.environments.atari.vtrace_main', FLAGS)   # raises UnknownName

An unknown `--env_name` (gym and mujoco: a Gymnasium id) or `--game` (atari: an ALE game;
football: a gfootball scenario; dmlab: a level) otherwise passes `seed_rl.launch.flag_check`
and fails only once the learner has started and created its first environment. Here each name
is checked against the list its environment module accepts, and refused in one line with the
closest names:

  unknown --env_name=CartPol-v1 (did you mean CartPole-v1 ...?): not a registered Gymnasium id

Where an environment module has a check of its own (mujoco's `check_env_name`, atari's
`check_game_name`, football's `check_reward_experiment`), that check is called, so that the
launcher and the environment refuse the same names with the same suggestions; its ValueError
becomes an `UnknownName` that names the flag:

  --game: Unknown Atari game 'Pongg' (...). Did you mean 'Pong'?

What each entry point package accepts, and so what is refused here:
  gym       what `gymnasium.make` finds: a registered id, or an unversioned name with a
            registered version (the newest is used); `module:Id` imports `module` first, so
            such ids pass unchecked (the module is the user's), except `ale_py:ALE/...`. Plain
            `ALE/...` ids are refused: the gym entry points do not import ale_py, which
            registers them.
  mujoco    what `mujoco.env.check_env_name` accepts: a registered id (`gymnasium.spec`) or
            one of the toy envs (`toy_env`, ...); the mujoco-py ids (`Hopper-v2`) are refused
            with their successor. The gym entry points check their MuJoCo ids with it too
            (importing the mujoco env module for those ids only).
  atari     what `atari.env.check_game_name` accepts: a game of ale-py's ROMs.
  football  a module of gfootball's `scenarios` package, listed from its files without
            importing gfootball (its engine); not checked where gfootball is not installed.
            `--reward_experiment` is checked by `football.env.check_reward_experiment`.
  dmlab     any level name passes, as the env passes it to the engine, except a near miss of a
            known level (`dmlab.games`: DMLab-30 and the classic levels), e.g.
            explore_goal_location_small, which is refused as a typo. Paths (names with `/`)
            and names that differ from a known one in digits only pass.

Only the entry points of this package are checked (`seed_rl.environments.<env>.*`): other
modules bring their own environment factories. Imports what those entry points import already
(gymnasium, their environment module when checking its names; ale_py for Atari ids), no
TensorFlow, and creates no environment.
"""

import difflib
import functools
import importlib.util
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium

_PACKAGE = 'seed_rl.environments.'
_ALE_NAMESPACE = 'ALE/'


class UnknownName(ValueError):
  """A flag names an environment that the entry point's environment module would refuse."""


def _close_names(value: str, known: Iterable[str], cutoff: float = 0.6) -> list[str]:
  """The known names closest to `value`, ignoring case (e.g. 'pong' -> 'Pong')."""
  by_lower = {}
  for name in known:
    by_lower.setdefault(name.lower(), name)
  if value.lower() in by_lower:
    return [by_lower[value.lower()]]
  matches = difflib.get_close_matches(value.lower(), list(by_lower), n=3, cutoff=cutoff)
  return [by_lower[match] for match in matches]


def _unknown(flag: str, value: str, suggestions: Sequence[str], what: str) -> UnknownName:
  hint = f' (did you mean {" or ".join(suggestions)}?)' if suggestions else ''
  return UnknownName(f'unknown --{flag}={value}{hint}: {what}')


def _register_ale() -> None:
  """Registers ale-py's ids (ALE/Pong-v5, PongNoFrameskip-v4, ...) with Gymnasium."""
  import ale_py  # pylint: disable=g-import-not-at-top
  gymnasium.register_envs(ale_py)


def _mujoco_id(env_name: str) -> None:
  """Refuses a MuJoCo id (one of gymnasium's mujoco package, or a mujoco-py one such as
  Hopper-v2) that the mujoco environment module refuses; other ids pass."""
  if 'mujoco' in str(gymnasium.registry[env_name].entry_point):
    _mujoco_env_name(env_name)


def _has_a_version(env_name: str) -> bool:
  """Whether `env_name` is an unversioned name with a registered version (CartPole)."""
  try:
    namespace, name, version = gymnasium.envs.registration.parse_env_id(env_name)
  except gymnasium.error.Error:  # Not of the form [namespace/]name[-vN].
    return False
  return version is None and any(s.namespace == namespace and s.name == name
                                 for s in gymnasium.registry.values())


def _check_gymnasium_id(env_id: str, given: str | None = None) -> None:
  """Refuses a Gymnasium id that `gymnasium.make` would not find, and a MuJoCo id that the
  mujoco environment module refuses (`_mujoco_id`).

  Args:
    env_id: the id to look up; an unversioned name passes when a version of it is registered,
      as `gymnasium.make` takes the newest.
    given: the `--env_name` value as given, when it is more than `env_id` (`module:id`).

  Raises:
    UnknownName: the id is unknown or a mujoco-py one.
  """
  if env_id in gymnasium.registry:
    _mujoco_id(env_id)
    return
  if _has_a_version(env_id):
    return
  suggestions = _close_names(env_id, gymnasium.registry)
  if given and given != env_id:
    prefix = given[:-len(env_id)]
    suggestions = [prefix + suggestion for suggestion in suggestions]
  raise _unknown('env_name', given or env_id, suggestions,
                 'not a registered Gymnasium id (e.g. CartPole-v1, Acrobot-v1, Pendulum-v1; '
                 'all: python -c "import gymnasium; gymnasium.pprint_registry()")')


def _gym_env_name(env_name: str) -> None:
  """The gym entry points: `gymnasium.make(env_name)` (see the module docstring)."""
  module, separator, env_id = env_name.partition(':')
  if separator and module != 'ale_py':
    return  # The user's module registers the id when gymnasium.make imports it.
  if separator or env_name.startswith(_ALE_NAMESPACE):
    _register_ale()
  if separator:
    _check_gymnasium_id(env_id, given=env_name)
    return
  if env_name.startswith(_ALE_NAMESPACE) and env_name in gymnasium.registry:
    raise UnknownName(f'--env_name={env_name} is registered by ale_py, which the gym entry '
                      f'points do not import: use --env_name=ale_py:{env_name}, or the atari '
                      'entry points (./run_local.sh atari ..., --game=NAME)')
  _check_gymnasium_id(env_name)


def _mujoco_env_name(env_name: str) -> None:
  """The mujoco entry points: what `mujoco.env.check_env_name` accepts."""
  from seed_rl.environments.mujoco import env  # pylint: disable=g-import-not-at-top
  try:
    env.check_env_name(env_name)
  except ValueError as e:
    raise UnknownName(f'--env_name: {e}') from None


def _atari_game(game: str) -> None:
  """The atari entry points: what `atari.env.check_game_name` accepts."""
  from seed_rl.environments.atari import env  # pylint: disable=g-import-not-at-top
  try:
    env.check_game_name(game)
  except ValueError as e:
    raise UnknownName(f'--game: {e}') from None


@functools.lru_cache(maxsize=1)
def football_scenarios() -> tuple[str, ...]:
  """The scenario names of the installed gfootball (its `scenarios` package's modules), read
  from its files without importing gfootball; empty when gfootball is not installed."""
  spec = importlib.util.find_spec('gfootball')
  if spec is None or not spec.submodule_search_locations:
    return ()
  directories = [f'{location}/scenarios' for location in spec.submodule_search_locations]
  return tuple(sorted(module.name for module in pkgutil.iter_modules(directories)))


def _football_game(game: str) -> None:
  names = football_scenarios()
  if names and game not in names:
    raise _unknown('game', game, _close_names(game, names),
                   f'not a scenario of the installed gfootball ({len(names)} scenarios, e.g. '
                   '11_vs_11_easy_stochastic, academy_empty_goal_close)')


def _football_reward_experiment(reward_experiment: str) -> None:
  from seed_rl.environments.football import env  # pylint: disable=g-import-not-at-top
  try:
    env.check_reward_experiment(reward_experiment)
  except ValueError as e:
    raise _unknown('reward_experiment', reward_experiment,
                   _close_names(reward_experiment, ('scoring', 'scoring,checkpoints')),
                   str(e).rstrip('.')) from None


def _differs_in_digits_only(name: str, known: str) -> bool:
  strip = lambda text: ''.join(c for c in text if not c.isdigit())
  return strip(name) == strip(known)


def _dmlab_level(game: str) -> None:
  from seed_rl.environments.dmlab import games  # pylint: disable=g-import-not-at-top
  known = set(games.ALL_GAMES) | set(games.OTHERS)
  if game in known or '/' in game:
    return
  near = [name for name in _close_names(game, known, cutoff=0.9)
          if abs(len(name) - len(game)) <= 2 and not _differs_in_digits_only(game, name)]
  if near:
    raise _unknown('game', game, near,
                   'a near miss of a DeepMind Lab level (DMLab-30 or classic); other names '
                   'pass to the engine as they are')


# Entry point package -> (flag, check of its value) for each flag that names an environment.
_CHECKS: dict[str, tuple[tuple[str, Callable[[str], None]], ...]] = {
    'gym': (('env_name', _gym_env_name),),
    'mujoco': (('env_name', _mujoco_env_name),),
    'atari': (('game', _atari_game),),
    'football': (('game', _football_game), ('reward_experiment', _football_reward_experiment)),
    'dmlab': (('game', _dmlab_level),),
}


def check(module: str, values: Any) -> None:
  """Checks the environment flags in `values` (absl FLAGS or any object with those attributes)
  of the entry point `module`; other modules than this package's entry points are not checked.

  Raises:
    UnknownName: a name the entry point's environment module would refuse (one line).
  """
  if not module.startswith(_PACKAGE):
    return
  package = module[len(_PACKAGE):].split('.', 1)[0]
  for flag, check_value in _CHECKS.get(package, ()):
    value = getattr(values, flag, None)
    if value is not None:
      check_value(str(value))
