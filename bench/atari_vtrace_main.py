r"""Atari V-trace with the network of `--network` (`bench.atari_networks`): learner or actor by
--run_mode, or with `--measure_ceiling_secs` the compute-only ceiling (`bench.ceiling_mode`).

  python -m bench.atari_vtrace_main --network=nature --run_mode=learner --game=Pong
  python -m bench.atari_vtrace_main --network=nature --measure_ceiling_secs=5 --num_envs=2

`bench/end_to_end.py` runs it with the same flags as `seed_rl.environments.atari.vtrace_main`.
"""

from absl import app
from absl import flags

from bench import atari_networks
from bench import ceiling_mode
from seed_rl.environments.atari import env
from seed_rl.environments.atari import vtrace_main

FLAGS = flags.FLAGS

flags.DEFINE_enum('network', 'impala', atari_networks.NETWORKS,
                  'minimal: an MLP of 8 units; nature: the Nature-DQN torso without LSTM; '
                  'impala: ImpalaDeep, as seed_rl.environments.atari.vtrace_main.')
flags.DEFINE_float('measure_ceiling_secs', 0.,
                   'If positive, run no pipeline: time the network\'s inference and training for '
                   'this many seconds each, then both at once as long, and print the '
                   'compute-only ceiling.')


def create_agent(action_space, observation_space, parametric_action_distribution):
  """The network of `--network`; impala is the agent's own entry point's."""
  if FLAGS.network == 'impala':
    return vtrace_main.create_agent(action_space, observation_space,
                                    parametric_action_distribution)
  return atari_networks.create_vtrace_network(FLAGS.network, parametric_action_distribution)


def main(argv):
  ceiling_mode.run_or_measure(argv, FLAGS.measure_ceiling_secs, env.create_environment,
                              'seed_rl.agents.vtrace.learner', 'VTraceAgent', create_agent,
                              vtrace_main.create_optimizer, FLAGS)


if __name__ == '__main__':
  app.run(main)
