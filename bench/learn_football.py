r"""Learning benchmark: V-trace on GFootball `academy_empty_goal_close` until it scores.

  python -m bench.learn_football [--network gfootball|small] [--frame_budget 1000000]
                                 [--num_actors 2] [--env_batch_size 4] [--max_minutes 20]

Starts a real learner and `num_actors` actors (unix socket, as `./run_local.sh football vtrace`
does) and follows the learner's per-episode log lines. It stops when the mean raw return (the
score: +1 for a goal) of the last `window` episodes exceeds `target` (0.5: scoring in more than
half of the episodes), when the learner has used `frame_budget` environment frames, or after
`max_minutes`. Prints the network, whether the target was reached, the frames used and the wall
time, and the curve of windowed mean returns.

`--network gfootball` (the default) is the full SEED GFootball network (four ResNet stacks);
`--network small` is a two-layer conv net on the same unpacked SMM planes, for when the full
network, not the environment, bounds the frames/s (docs/tuning.md, Google Research Football, has
the speed of each).

The same file is also the entry point of the processes it starts: run with `--run_mode` it is
`seed_rl.environments.football.vtrace_main` with the network chosen by the
`SEED_RL_BENCH_NETWORK` environment variable.
"""

import argparse
import os
import pathlib
import sys
from typing import Sequence

from bench import episode_follow
from bench import process_group

MODULE = 'bench.learn_football'
GAME = 'academy_empty_goal_close'
NETWORK_VARIABLE = 'SEED_RL_BENCH_NETWORK'


def create_small_agent(action_space, observation_space, parametric_action_distribution):
  """A small feed-forward conv net on the unpacked SMM: the benchmark's CPU-friendly network."""
  del action_space, observation_space
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from seed_rl.agents.vtrace import networks  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.football import observation  # pylint: disable=g-import-not-at-top

  class SmallFootballNet(networks.RecurrentActorCritic):
    """Conv 16x5x5/2, conv 32x3x3/2, 3x3 max-pool/2, dense 128, heads; no LSTM."""

    def __init__(self):
      super().__init__(parametric_action_distribution.param_size, lstm_sizes=[],
                       name='SmallFootballNet')
      self._net = networks.track_layers(self, '_net', [
          tf.keras.layers.Conv2D(16, 5, strides=2, padding='same', activation='relu'),
          tf.keras.layers.Conv2D(32, 3, strides=2, padding='same', activation='relu'),
          tf.keras.layers.MaxPool2D(3, strides=2, padding='same'),
          tf.keras.layers.Flatten(),
          tf.keras.layers.Dense(128, activation='relu')])

    def _torso(self, unused_prev_actions, env_outputs):
      x = observation.unpackbits(env_outputs.observation) / 255.
      for layer in self._net:
        x = layer(x)
      return x

    def _sample(self, policy_logits):
      return parametric_action_distribution(policy_logits).sample()

  return SmallFootballNet()


def define_flags(argv: Sequence[str]) -> None:
  """Defines the flags of this file's learner and actors: those of football's `vtrace_main`,
  whatever the command line (`seed_rl.evaluate` calls it to recreate the environment of a
  run; the processes import `vtrace_main` themselves)."""
  del argv
  from seed_rl.environments.football import vtrace_main  # pylint: disable=g-import-not-at-top,unused-import


def _entry_point() -> None:
  """Runs as `vtrace_main` with the network of $SEED_RL_BENCH_NETWORK (learner or actor)."""
  from absl import app  # pylint: disable=g-import-not-at-top

  from seed_rl.common import entry_point  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.football import (
    env,  # pylint: disable=g-import-not-at-top
    vtrace_main,  # pylint: disable=g-import-not-at-top
  )

  network = os.environ.get(NETWORK_VARIABLE, 'gfootball')
  create_agent = {'small': create_small_agent, 'gfootball': vtrace_main.create_agent}[network]

  def main(argv):
    entry_point.run(argv, env.create_environment, 'seed_rl.agents.vtrace.learner',
                    create_agent, vtrace_main.create_optimizer)

  app.run(main)


def run(args: argparse.Namespace, logdir: pathlib.Path) -> dict:
  """Trains until the target, the frame budget or the time limit; returns what happened
  (`episode_follow.follow`)."""
  num_envs = args.num_actors * args.env_batch_size
  flags = [f'--logdir={logdir}', f'--server_address=unix:{logdir}/learner.sock',
           f'--game={GAME}', '--reward_experiment=scoring', f'--num_envs={num_envs}',
           f'--env_batch_size={args.env_batch_size}', f'--unroll_length={args.unroll_length}',
           f'--batch_size={args.batch_size}', f'--learning_rate={args.learning_rate}',
           f'--entropy_cost={args.entropy_cost}', f'--discounting={args.discounting}',
           f'--total_environment_frames={int(args.frame_budget)}',
           '--save_checkpoint_secs=100000', f'--seed={args.seed}']
  return episode_follow.train_and_follow(logdir, MODULE, flags, args.num_actors, args.window,
                                         args.target, args.max_minutes,
                                         {NETWORK_VARIABLE: args.network})


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--network', choices=['gfootball', 'small'], default='gfootball')
  parser.add_argument('--frame_budget', type=float, default=1e6)
  parser.add_argument('--max_minutes', type=float, default=20)
  parser.add_argument('--target', type=float, default=0.5)
  parser.add_argument('--window', type=int, default=100)
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--env_batch_size', type=int, default=4)
  parser.add_argument('--unroll_length', type=int, default=16)
  parser.add_argument('--batch_size', type=int, default=4)
  parser.add_argument('--learning_rate', type=float, default=0.00048)
  parser.add_argument('--entropy_cost', type=float, default=0.003)
  parser.add_argument('--discounting', type=float, default=0.993)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--logdir', default=None,
                      help='New directory that keeps the logs (default: a temporary one).')
  args = parser.parse_args()

  result = process_group.run_in_logdir(args.logdir, lambda logdir: run(args, logdir))
  network = ('GFootball (4 ResNet stacks)' if args.network == 'gfootball' else
             'small conv net (--network small)')
  print(f'football vtrace on {GAME}, {network}, {args.num_actors} actor(s) x '
        f'{args.env_batch_size} env(s), unroll {args.unroll_length}, batch {args.batch_size}, '
        f'lr {args.learning_rate:g}, entropy {args.entropy_cost:g}')
  episode_follow.print_result(result, args.window, args.target)


if __name__ == '__main__':
  if any(arg.startswith('--run_mode') for arg in sys.argv[1:]):
    _entry_point()
  else:
    main()
