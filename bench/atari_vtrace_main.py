r"""`seed_rl.environments.atari.vtrace_main` with the bench's minimal network
(`--minimal_network`), or with `--measure_ceiling_secs` the compute-only ceiling of its network
(`bench.ceiling_mode`).

  python -m bench.atari_vtrace_main --minimal_network --run_mode=learner --game=Pong
  python -m bench.atari_vtrace_main --network=nature --measure_ceiling_secs=5 --num_envs=2

`bench/end_to_end.py` runs it with the same flags as `seed_rl.environments.atari.vtrace_main`.
"""

from absl import app
from absl import flags

from bench import atari_networks
from bench import ceiling_mode
from seed_rl.agents.vtrace import config as agent_config
from seed_rl.environments.atari import env
from seed_rl.environments.atari import vtrace_main

FLAGS = flags.FLAGS

flags.DEFINE_bool('minimal_network', False, 'An MLP of 8 units instead of --network\'s.')
flags.DEFINE_float('measure_ceiling_secs', 0.,
                   'If positive, run no pipeline: time the network\'s inference and training for '
                   'this many seconds each, then both at once as long, and print the '
                   'compute-only ceiling.')


def create_agent(action_space, observation_space, parametric_action_distribution):
  """The minimal network, or the entry point's of `--network`."""
  if FLAGS.minimal_network:
    return atari_networks.create_minimal_vtrace_network(parametric_action_distribution)
  return vtrace_main.create_agent(action_space, observation_space,
                                  parametric_action_distribution)


def main(argv):
  ceiling_mode.run_or_measure(argv, FLAGS.measure_ceiling_secs, env.create_environment,
                              'seed_rl.agents.vtrace.learner', 'VTraceAgent', create_agent,
                              vtrace_main.create_optimizer, agent_config.VTraceConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
