"""The R2D2 counterpart of `bench/atari_vtrace_main.py`: Atari R2D2 with `--network`, or its
compute-only ceiling with `--measure_ceiling_secs`."""

from absl import app
from absl import flags

from bench import atari_networks
from bench import ceiling_mode
from seed_rl.environments.atari import env
from seed_rl.environments.atari import r2d2_main

FLAGS = flags.FLAGS

flags.DEFINE_enum('network', 'impala', atari_networks.NETWORKS,
                  'minimal: an MLP and LSTM of 8 units; nature: the Nature-DQN torso without '
                  'LSTM (frames still stacked by --stack_size); impala: DuelingLSTMDQNNet, as '
                  'seed_rl.environments.atari.r2d2_main.')
flags.DEFINE_float('measure_ceiling_secs', 0., 'As in bench/atari_vtrace_main.py.')


def create_agent(env_output_specs, num_actions):
  """The network of `--network`; impala is the agent's own entry point's."""
  if FLAGS.network == 'impala':
    return r2d2_main.create_agent(env_output_specs, num_actions)
  return atari_networks.create_r2d2_network(FLAGS.network, num_actions,
                                            env_output_specs.observation.shape, FLAGS.stack_size)


def main(argv):
  ceiling_mode.run_or_measure(argv, FLAGS.measure_ceiling_secs, env.create_environment,
                              'seed_rl.agents.r2d2.learner', 'R2D2Agent', create_agent,
                              r2d2_main.create_optimizer, FLAGS)


if __name__ == '__main__':
  app.run(main)
