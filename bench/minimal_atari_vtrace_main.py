"""Atari V-trace entry point with a minimal network, so a benchmark measures the pipeline
(actors, RPC, batching, unroll bookkeeping, training loop) rather than convolutions."""

from absl import app

from seed_rl.common import entry_point
from seed_rl.environments.atari import env
from seed_rl.environments.atari import vtrace_main


def create_minimal_agent(action_space, observation_space, parametric_action_distribution):
  del action_space, observation_space
  from seed_rl.agents.vtrace import networks  # pylint: disable=g-import-not-at-top
  return networks.MLPandLSTM(parametric_action_distribution, mlp_sizes=[8])


def main(argv):
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.vtrace.learner',
                  create_minimal_agent, vtrace_main.create_optimizer)


if __name__ == '__main__':
  app.run(main)
