r"""Checks the flags of an entry point in about a second, before anything starts.

  python -m seed_rl.launch.flag_check [--prefix=NAME] [--shape=TEXT] [--print=FLAG,...] \
      [--print_given=FLAG,...] MODULE [--flag=value ...]

MODULE is an entry point such as `seed_rl.environments.gym.vtrace_main`; the flags are the
command line its learner (or actor) would get. The entry points define flags only at import time
(TensorFlow is imported by the learner when it runs), so importing one costs about a second. The
flags are parsed with absl exactly as the entry point will parse them; the environment names of
this package's entry points (`--env_name`, `--game`, football's `--reward_experiment`) are
checked against what their environment modules accept (`seed_rl.environments.env_names`,
imported by name as the entry point is: no environment is created); for `--run_mode=learner`
the learner's own checks of its batch sizes and counts follow (`seed_rl.common.config.checks`,
the checks the learner makes before it starts).

Exit status 0 when the flags are good (then `--print` writes `name=value` lines of the parsed
flags, e.g. `--print=logdir,server_address`, and `--print_given` a line `given_NAME=1` for each
of its flags given on the command line or in a flag file, else `given_NAME=0`), 3 when MODULE
cannot be imported by this Python,
else 2 with one line on stderr:

  run_local.sh: unknown flag --gme=Breakout (did you mean --game?) of seed_rl.environments...
  run_local.sh: --game: Unknown Atari game 'Pongg' (...). Did you mean 'Pong', ...?

`--prefix` starts that line (default `seed_rl`), `--shape` says where `--num_envs` comes from
in the messages (e.g. "NUM_ACTORS x ENV_BATCH_SIZE = 2 x 4"). The prefixes of the launchers,
`run_local.sh` and `seed_rl gcp: error`, also say where an unknown flag that looks like an
actor or environment count (`--num_actors=4`) is set instead: run_local.sh's positional
arguments, the gcp scripts' environment variables (`LAUNCHER_COUNTS`).

From Python: `check(module, argv, shape=None, launcher=None)` returns absl's FLAGS or raises
`FlagCheckError` with that line's message. It imports the module, which defines its flags in
this process's absl FLAGS: check one entry point per process.

No TensorFlow is imported here.
"""

import difflib
import importlib
import re
import sys
from typing import Any, Optional, Sequence

from absl import flags

from seed_rl.common.config import checks
from seed_rl.common.config import learner_config
from seed_rl.grpc import address_list

# Launcher (the --prefix of its messages) -> where it sets the actor and environment counts,
# which its users may try to give as flags.
LAUNCHER_COUNTS = {
    'run_local.sh': 'the number of actors and of environments per actor are positional: '
                    './run_local.sh ENV AGENT NUM_ACTORS [ENV_BATCH_SIZE], e.g. '
                    './run_local.sh gym vtrace 4 2',
    'seed_rl gcp: error': 'the actors are set by the environment variables NUM_ACTOR_MACHINES '
                          'and ACTORS_PER_MACHINE (ENV_BATCH_SIZE: environments per actor), '
                          'e.g. NUM_ACTOR_MACHINES=4 ACTORS_PER_MACHINE=8 '
                          'gcp/train_<scenario>.sh',
}
# The entry points' count flags, which the launchers set themselves.
_COUNT_FLAGS = ('num_envs', 'env_batch_size')
# This package's entry points, whose environment names seed_rl.environments.env_names checks.
_PACKAGE_ENTRY_POINTS = 'seed_rl.environments.'


class FlagCheckError(ValueError):
  """Flags the entry point would refuse; the message is one line."""


class ImportFailed(FlagCheckError):
  """The entry point cannot be imported here (e.g. a package this Python lacks)."""


def _suggestions(name: str, error: flags.UnrecognizedFlagError,
                 known: Sequence[str]) -> Sequence[str]:
  """Close names of `name` (or of it without a boolean's `no` prefix), else absl's "Did you
  mean" names."""
  for candidate in (name, name[2:] if name.startswith('no') else ''):
    matches = difflib.get_close_matches(candidate, known, n=3, cutoff=0.75) if candidate else []
    if matches:
      return matches
  message = str(error)
  if 'Did you mean:' in message:
    names = message.split('Did you mean:', 1)[1].strip().rstrip('?').strip()
    return [n.strip() for n in names.split(',') if n.strip()]
  return []


def _looks_like_a_count(name: str, suggestions: Sequence[str]) -> bool:
  """Whether the unknown flag `name` is likely meant as an actor or environment count
  (--num_actors, --actors, --num_actorz, --env_batch_siz), which launchers take otherwise."""
  return ('actor' in name.lower() or re.fullmatch(r'(n_|num_)?envs?', name.lower()) is not None
          or any(suggestion in _COUNT_FLAGS for suggestion in suggestions))


def _unknown_flag_message(error: flags.UnrecognizedFlagError, argv: Sequence[str],
                          module: str, launcher: Optional[str] = None) -> str:
  name = error.flagname
  # The argument as given (absl keeps only the name), e.g. --gme=Breakout.
  given = next((a for a in argv if a.lstrip('-').split('=', 1)[0] == name), f'--{name}')
  suggestions = _suggestions(name, error, sorted(flags.FLAGS))
  if launcher in LAUNCHER_COUNTS and _looks_like_a_count(name, suggestions):
    return f'unknown flag {given} of {module}: {LAUNCHER_COUNTS[launcher]}'
  hint = ''
  if suggestions:
    hint = ' (did you mean ' + ' or '.join(f'--{s}' for s in suggestions) + '?)'
  return f'unknown flag {given}{hint} of {module}'


def parse(module: str, argv: Sequence[str],
          launcher: Optional[str] = None) -> flags.FlagValues:
  """Imports the entry point `module` and parses `argv` (without the program name) with its
  flags, as the entry point would; raises FlagCheckError. `launcher` (a key of
  LAUNCHER_COUNTS) says where an unknown flag that looks like a count is set instead."""
  try:
    importlib.import_module(module)
  except Exception as e:  # pylint: disable=broad-except
    last = str(e).strip().splitlines()
    raise ImportFailed(f'cannot import {module}: {type(e).__name__}: '
                         f'{last[-1] if last else ""}'.rstrip(': ')) from None
  values = flags.FLAGS
  try:
    rest = values([module] + list(argv))
  except flags.UnrecognizedFlagError as e:
    raise FlagCheckError(_unknown_flag_message(e, argv, module, launcher)) from None
  except flags.Error as e:
    raise FlagCheckError(f'{e} ({module})') from None
  if len(rest) > 1:
    raise FlagCheckError(f'unexpected argument(s) {" ".join(rest[1:])}: {module} takes '
                         '--flag=value arguments only')
  return values


def check_learner_config(config: learner_config.LearnerConfig,
                         shape: Optional[str] = None) -> None:
  """The learner's own checks of its config that need no TensorFlow and no environment
  (`checks.validate_runtime_config`: the config is frozen, and stays as it is).

  `shape` says where `--num_envs` comes from (e.g. "NUM_ACTORS x ENV_BATCH_SIZE = 2 x 4").
  """
  try:
    checks.validate_runtime_config(config, num_envs_source=shape)
  except ValueError as e:
    raise FlagCheckError(str(e)) from None


def learner_config_of(values: flags.FlagValues) -> learner_config.LearnerConfig:
  """The config the entry point's learner reads from the flags `values`: its agent's, read
  with the agent's `from_flags` (`learner_flags.config_class_of_flags`).

  Raises:
    FlagCheckError: the config cannot be read (a flag it needs is not defined, or a value it
      refuses), naming the flag.
  """
  # Imported here: its import defines the learner's flags, which the entry point (imported
  # first) defines if its learner reads them.
  learner_flags = importlib.import_module('seed_rl.common.config.learner_flags')
  try:
    return learner_flags.config_class_of_flags().from_flags(values)
  except ValueError as e:
    raise FlagCheckError(str(e)) from None


def check_environment_names(module: str, values: Any) -> None:
  """The environment names among the flags `values` of this package's entry point `module`
  (`seed_rl.environments.env_names`); other modules bring their own environment factories and
  are not checked. Imported by name, as the entry point is."""
  if not module.startswith(_PACKAGE_ENTRY_POINTS):
    return
  env_names = importlib.import_module('seed_rl.environments.env_names')
  try:
    env_names.check(module, values)
  except env_names.UnknownName as e:
    raise FlagCheckError(str(e)) from None


def check(module: str, argv: Sequence[str], shape: Optional[str] = None,
          launcher: Optional[str] = None) -> flags.FlagValues:
  """`parse(module, argv, launcher)`, `check_environment_names`, the list of
  `--server_address` (`address_list.split`: one learner serves every address of it), then for
  `--run_mode=learner` `check_learner_config`."""
  values = parse(module, argv, launcher)
  check_environment_names(module, values)
  if 'server_address' in values:
    try:
      address_list.split(values.server_address)
    except address_list.AddressListError as e:
      raise FlagCheckError(str(e)) from None
  if 'run_mode' in values and values.run_mode == 'learner':
    check_learner_config(learner_config_of(values), shape)
  return values


def main(argv: Sequence[str]) -> int:
  options = {'prefix': 'seed_rl', 'shape': None, 'print': '', 'print_given': ''}
  args = list(argv[1:])
  while args and args[0].split('=', 1)[0] in ('--prefix', '--shape', '--print',
                                              '--print_given'):
    name, _, value = args.pop(0)[2:].partition('=')
    options[name] = value
  if not args or args[0].startswith('-'):
    print('usage: python -m seed_rl.launch.flag_check [--prefix=NAME] [--shape=TEXT] '
          '[--print=FLAG,...] [--print_given=FLAG,...] MODULE [--flag=value ...]',
          file=sys.stderr)
    return 2
  module, module_argv = args[0], args[1:]
  try:
    values = check(module, module_argv, options['shape'], options['prefix'])
    lines = []
    for name in filter(None, options['print'].split(',')):
      if name not in values:
        raise FlagCheckError(f'{module} has no flag --{name}')
      lines.append(f'{name}={values[name].value}')
    for name in filter(None, options['print_given'].split(',')):
      if name not in values:
        raise FlagCheckError(f'{module} has no flag --{name}')
      lines.append(f'given_{name}={int(values[name].present)}')
  except FlagCheckError as e:
    print(f'{options["prefix"]}: {e}', file=sys.stderr)
    return 3 if isinstance(e, ImportFailed) else 2
  for line in lines:
    print(line)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
