"""The R2D2 counterpart of `bench/atari_vtrace_main.py`: `seed_rl.environments.atari.r2d2_main`
with the bench's minimal network (`--minimal_network`), or its compute-only ceiling with
`--measure_ceiling_secs`."""

from absl import app
from absl import flags

from bench import atari_networks
from bench import ceiling_mode
from seed_rl.agents.r2d2 import config as agent_config
from seed_rl.environments.atari import env
from seed_rl.environments.atari import r2d2_main

FLAGS = flags.FLAGS

flags.DEFINE_bool('minimal_network', False,
                  'An MLP and LSTM of 8 units instead of --network\'s.')
flags.DEFINE_float('measure_ceiling_secs', 0., 'As in bench/atari_vtrace_main.py.')


def create_agent(env_output_specs, num_actions):
  """The minimal network, or the entry point's of `--network`."""
  if FLAGS.minimal_network:
    return atari_networks.create_minimal_r2d2_network(num_actions)
  return r2d2_main.create_agent(env_output_specs, num_actions)


def main(argv):
  ceiling_mode.run_or_measure(argv, FLAGS.measure_ceiling_secs, env.create_environment,
                              'seed_rl.agents.r2d2.learner', 'R2D2Agent', create_agent,
                              r2d2_main.create_optimizer, agent_config.R2D2Config.from_flags)


if __name__ == '__main__':
  app.run(main)
