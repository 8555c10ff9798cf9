"""The learner and actor processes of `bench/learn_atari.py` and `bench/pixel_bandit.py`: an
Atari entry point with the Nature-DQN network (`seed_rl.environments.atari.nature_networks`),
training V-trace, PPO or the configurable on-policy agent with V-trace's loss, as `--agent` says.

`vtrace` runs as `seed_rl.environments.atari.vtrace_main` does, with this network. The
configurable on-policy agent (`ppo`, `onpolicy_vtrace`: the loss its gin bindings choose) has no
Atari entry point in seed_rl (the original had none either); here it gets the Atari env flags, the
on-policy agent's flags and gin bindings, and the network without LSTM: its minibatches are whole
unrolls (`--batch_mode=shuffle`), so the frame stack kept in the network's state stays right.
"""

import sys
from typing import Any, Callable, NamedTuple, Optional, Sequence

AGENTS = ('vtrace', 'ppo', 'onpolicy_vtrace')
# The agents that run the configurable on-policy learner.
ONPOLICY_AGENTS = ('ppo', 'onpolicy_vtrace')
# `bench.nature_networks.INITIALIZATIONS`, named here without importing TensorFlow (the actors
# parse the same flags).
INITIALIZATIONS = ('orthogonal', 'glorot')


def agent_of(argv: Sequence[str]) -> str:
  """The `--agent=NAME` of a process's command line; 'vtrace' without one.

  Read before absl parses the flags, since each agent defines its own.
  """
  agent = 'vtrace'
  for arg, following in zip(argv[1:], list(argv[2:]) + ['']):
    if arg.startswith('--agent='):
      agent = arg[len('--agent='):]
    elif arg == '--agent':
      agent = following
  if agent not in AGENTS:
    raise SystemExit(f'--agent must be one of {", ".join(AGENTS)}, got {agent!r}')
  return agent


class Learner(NamedTuple):
  """What `seed_rl.common.entry_point.run` needs of an agent besides the environment."""
  learner_module: str
  create_agent: Callable[..., Any]
  create_optimizer: Callable[..., Any]
  prepare_learner: Optional[Callable[[], None]]


def define_flags(argv: Sequence[str]) -> Learner:
  """Defines the flags of the agent that `argv` (a command line) names with `--agent`, the
  Atari environment's among them, and returns the agent's learner.

  The entry points of `bench/learn_atari.py` and `bench/pixel_bandit.py` expose it as their
  own `define_flags`: `seed_rl.evaluate` calls it to recreate the learner's environment, since
  which flags exist depends on the agent.
  """
  from absl import flags  # pylint: disable=g-import-not-at-top

  agent = agent_of(argv)
  flags.DEFINE_enum('agent', 'vtrace', AGENTS, 'The agent that learns.')
  initialization = flags.DEFINE_enum(
      'initialization', 'orthogonal', INITIALIZATIONS,
      'The network\'s initial kernels: orthogonal (PPO\'s Atari agents\') or glorot (Keras\'s '
      'default).')
  if agent in ONPOLICY_AGENTS:
    from seed_rl.agents.policy_gradient import main_flags  # pylint: disable=g-import-not-at-top
    from seed_rl.environments.atari import env_flags  # pylint: disable=g-import-not-at-top,unused-import
    stack_size = flags.DEFINE_integer('stack_size', 4, 'Frames stacked inside the network.')

    def create_agent(unused_action_space, observation_space, parametric_action_distribution):
      from seed_rl.environments.atari import nature_networks  # pylint: disable=g-import-not-at-top
      return nature_networks.NatureOnPolicyAgent(
          parametric_action_distribution, stack_size=stack_size.value,
          observation_shape=observation_space.shape, initialization=initialization.value)

    return Learner('seed_rl.agents.policy_gradient.learner', create_agent,
                   main_flags.create_optimizer, main_flags.parse_gin)

  # V-trace's entry point defines --stack_size (for its --network=nature).
  from seed_rl.environments.atari import vtrace_main  # pylint: disable=g-import-not-at-top
  lstm_size = flags.DEFINE_integer('lstm_size', 0, 'Units of an LSTM after the torso (0: none).')

  def create_agent(unused_action_space, observation_space,  # pylint: disable=function-redefined
                   parametric_action_distribution):
    from seed_rl.environments.atari import nature_networks  # pylint: disable=g-import-not-at-top
    return nature_networks.NatureActorCritic(
        parametric_action_distribution, lstm_sizes=[lstm_size.value] if lstm_size.value else [],
        stack_size=flags.FLAGS.stack_size, observation_shape=observation_space.shape,
        initialization=initialization.value)

  return Learner('seed_rl.agents.vtrace.learner', create_agent, vtrace_main.create_optimizer,
                 None)


def main(create_environment: Optional[Callable[[int, Any], Any]] = None,
         define_all_flags: Callable[[Sequence[str]], Learner] = define_flags) -> None:
  """Runs the learner or an actor of `--agent` on `create_environment(env_id, config)`'s env
  (default: the Atari env of `--game`), with the flags `define_all_flags(sys.argv)` defines."""
  from absl import app  # pylint: disable=g-import-not-at-top

  from seed_rl.common import entry_point  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.atari import env  # pylint: disable=g-import-not-at-top

  learner = define_all_flags(sys.argv)
  app.run(lambda argv: entry_point.run(
      argv, create_environment or env.create_environment, learner.learner_module,
      learner.create_agent, learner.create_optimizer, prepare_learner=learner.prepare_learner))
