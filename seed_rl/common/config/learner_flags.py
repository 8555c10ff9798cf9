"""Flags every learner shares (names of the original SEED RL), defined once.

Several agents' flag modules may be imported into one process (tools, tests, a custom entry
point), and each agent has its own defaults for some of the flags they share. So those flags
never hold an agent's default: they default to None, "the agent's default", which the agent's
config fills in (`LearnerConfig.from_flags`), and each agent's flag module adds its default to
their help (`declare_agent_defaults`), so that `--helpfull` names every imported agent's. Flags
that only some agents define (`define_agent_flag`, e.g. `--entropy_cost`) keep their default
while the agents that define them agree on it; where they differ, the flag defaults to None in
the same way. What a config holds therefore never depends on the order of the imports.
"""

import dataclasses
from typing import Any, Callable, Dict, Type

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)
from seed_rl.common.config import learner_config

flags.DEFINE_integer('save_checkpoint_secs', 1800,
                     'Seconds between checkpoints (and exports of the policy).')
flags.DEFINE_float('total_environment_frames', int(1e9),
                   'Environment frames to train for (agent steps x num_action_repeats).')
flags.DEFINE_integer('batch_size', None, 'Unrolls per training step.')
flags.DEFINE_integer('inference_batch_size', -1,
                     'Rows per inference batch on the learner; -1: '
                     'max(env_batch_size, num_envs // 2).')
flags.DEFINE_integer('unroll_length', None, 'Agent steps per unroll (plus one bootstrap step).')
flags.DEFINE_integer('num_training_tpus', 1,
                     'TPU cores used for training (the original\'s; TPU learners are not '
                     'supported yet, so it must be 1).')
flags.DEFINE_integer('checkpoints_to_keep', 3,
                     'Latest checkpoints kept in the logdir; a learner that cannot read the '
                     'latest one falls back to the one before.')
flags.DEFINE_string('init_checkpoint', None,
                    'Checkpoint to start from when the logdir holds none.')
flags.DEFINE_integer('unroll_queue_max_size', None,
                     'Completed unrolls waiting for training; inference blocks when the queue '
                     'is full (back-pressure on the actors).')
flags.DEFINE_float('discounting', None, 'Discount factor.')
flags.DEFINE_integer('log_episode_frequency', None,
                     'Episodes averaged into one TensorBoard point of the episode summaries.')
flags.DEFINE_bool('fresh_start', False,
                  'Start from scratch although the logdir holds checkpoints that cannot be '
                  'restored; they are moved aside into the logdir, never deleted. Without it, such '
                  'a learner stops and names the files.')
flags.DEFINE_float('actor_takeover_grace_secs', 60.,
                   'Seconds an actor may stay silent on an open connection before another actor '
                   '(new run ids for the same env ids) may take its environments over; a closed '
                   'connection frees them at once. An owner whose call waits in a stalled batch '
                   'longer than this looks silent too: keep it above start-up compilation and '
                   'checkpoint saves.')
flags.DEFINE_float('refuse_observations_above', 1e9,
                   'Float observations beyond this absolute value are refused for the calling '
                   'actor alone, like NaN; 0: no bound. The default keeps every square of an '
                   'observation finite in float32.')
flags.DEFINE_float('refuse_rewards_above', 1e9,
                   'Rewards beyond this absolute value are refused for the calling actor alone, '
                   'like NaN; 0: no bound. Not --max_abs_reward, which clips rewards in the loss.')
flags.DEFINE_enum('mixed_precision', 'off', ['off', 'bfloat16', 'auto'],
                  'bfloat16: a learner computing on the CPU runs its matrix products and '
                  'convolutions in bfloat16 (variables, losses and checkpoints stay float32); '
                  'auto: bfloat16 where that CPU has native bfloat16 (AMX or AVX512-BF16), else '
                  'float32; off: float32.')


#: The shared flags whose default is the agent's (None until its config fills it in).
AGENT_DEFAULT_FLAGS = ('batch_size', 'unroll_length', 'unroll_queue_max_size', 'discounting',
                       'log_episode_frequency')
_UNSET = ' Unset: the agent\'s default'

# The help each flag had before agents' defaults were added to it, and by flag name, each
# defining agent's (help text, default); read in sorted order, so that neither a flag's
# default nor its help depends on the order in which the agents' modules were imported.
_BASE_HELP: Dict[str, str] = {}
_AGENT_DEFAULTS: Dict[str, Dict[str, tuple]] = {}
# Agent -> its config class, for each agent whose flag module this process imported.
_CONFIG_CLASSES: Dict[str, Type[learner_config.LearnerConfig]] = {}


def _describe_agent_defaults(name: str) -> None:
  """Writes the defaults of the agents that declared `name` into its help."""
  by_agent = _AGENT_DEFAULTS[name]
  defaults = '; '.join(f'{agent}: {default!r}' for agent, (_, default) in sorted(by_agent.items()))
  flags.FLAGS[name].help = f'{_BASE_HELP[name]}{_UNSET} ({defaults}).'


def declare_agent_defaults(agent: str, config_class: Type[learner_config.LearnerConfig]) -> None:
  """Names `agent`'s defaults of the `AGENT_DEFAULT_FLAGS`, the fields of `config_class`, in
  their help; their values stay None, which `config_class.from_flags` turns into them.
  `config_class` becomes what `config_class_of_flags` gives."""
  _CONFIG_CLASSES[agent] = config_class
  fields = {field.name: field.default for field in dataclasses.fields(config_class)}
  for name in AGENT_DEFAULT_FLAGS:
    _BASE_HELP.setdefault(name, flags.FLAGS[name].help)
    _AGENT_DEFAULTS.setdefault(name, {})[agent] = (_BASE_HELP[name], fields[name])
    _describe_agent_defaults(name)


def config_class_of_flags() -> Type[learner_config.LearnerConfig]:
  """The config class of the agent whose flags this process defines (its flag module called
  `declare_agent_defaults`): what its entry point reads its flags into. `LearnerConfig` when
  the flags of no agent or of several are defined (tools and tests that import several)."""
  if len(_CONFIG_CLASSES) == 1:
    return next(iter(_CONFIG_CLASSES.values()))
  return learner_config.LearnerConfig


def define_agent_flag(define: Callable[..., Any], name: str, default: Any, help_text: str,
                      agent: str, **kwargs: Any) -> None:
  """Defines `agent`'s flag `name`: `define(name, default, help=help_text, **kwargs)` (e.g.
  `flags.DEFINE_float`) for the first agent that has it.

  When several agents have it, its help is that of the first of them by name; where their
  defaults differ, it defaults to None (each agent's config fills in its own) and its help
  names every agent's default.
  """
  by_agent = _AGENT_DEFAULTS.setdefault(name, {})
  if not by_agent:
    define(name, default, help=help_text, **kwargs)
  by_agent[agent] = (help_text, default)
  _BASE_HELP[name] = by_agent[min(by_agent)][0]
  if len({repr(value) for _, value in by_agent.values()}) > 1:
    flags.FLAGS.set_default(name, None)
    _describe_agent_defaults(name)
  else:
    flags.FLAGS[name].help = _BASE_HELP[name]
