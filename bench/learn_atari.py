r"""Learning benchmark: V-trace on Pong with a frame budget, until a mean return of +15.

  python -m bench.learn_atari [--frame_budget 1e7] [--num_actors 2] [--env_batch_size 8]
                              [--max_minutes 60] [--logdir DIR]

Starts a real learner and `num_actors` actors (unix socket, as `./run_local.sh atari vtrace`
does) and follows the learner's per-episode log lines. It stops when the mean raw return (the
game score) of the last `window` episodes exceeds `target`, when the learner has used
`frame_budget` environment frames, or after `max_minutes`. Prints the setting, the curve of
windowed mean returns against frames, and the frames and wall time to the target.

The network is the Nature-DQN torso (conv 32 8x8/4, 64 4x4/2, 64 3x3/1, dense 512) on the last
`stack_size` frames, stacked inside the network (the actors send single frames), the memory
Nature-DQN, A2C and PPO learn Pong with; `--lstm_size` adds an LSTM after the torso. The entry
point's ImpalaDeep trains at about 150 frames/s on 2 CPU cores, this one at several thousand.
The agent acts with the game's minimal action set (6 actions for Pong) unless
`--full_action_space`. The other settings are the Atari entry point's (IMPALA's: unrolls of 20,
entropy cost 0.01, rewards clipped to [-1, 1], frame skip 4, Adam with the rate decaying linearly
to 0 over the budget) with a smaller batch, for more gradient steps per frame; `--reward_scaling`
multiplies the clipped rewards in the loss.

The same file is also the entry point of the processes it starts: run with `--run_mode` it is
`seed_rl.environments.atari.vtrace_main` with that network.
"""

import argparse
import pathlib
import sys
from typing import Any, Callable, Optional

from bench import episode_follow
from bench import process_group

MODULE = 'bench.learn_atari'


def entry_point_main(create_environment: Optional[Callable[[int, Any], Any]] = None) -> None:
  """Runs as the Atari `vtrace_main` with the benchmark's network (learner or actor), on
  `create_environment(env_id, config)`'s env (default: the Atari env of `--game`)."""
  from absl import app  # pylint: disable=g-import-not-at-top
  from absl import flags  # pylint: disable=g-import-not-at-top

  from seed_rl.common import entry_point  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.atari import env  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.atari import vtrace_main  # pylint: disable=g-import-not-at-top

  stack_size = flags.DEFINE_integer('stack_size', 4, 'Frames stacked inside the network.')
  lstm_size = flags.DEFINE_integer('lstm_size', 0, 'Units of an LSTM after the torso (0: none).')

  def create_agent(unused_action_space, observation_space, parametric_action_distribution):
    from bench import nature_networks  # pylint: disable=g-import-not-at-top
    return nature_networks.NatureActorCritic(
        parametric_action_distribution, lstm_sizes=[lstm_size.value] if lstm_size.value else [],
        stack_size=stack_size.value, observation_shape=observation_space.shape)

  def main(argv):
    entry_point.run(argv, create_environment or env.create_environment,
                    'seed_rl.agents.vtrace.learner', create_agent, vtrace_main.create_optimizer)

  app.run(main)


def learner_flags(args: argparse.Namespace, logdir: pathlib.Path) -> list[str]:
  """The flags of the learner and the actors."""
  num_envs = args.num_actors * args.env_batch_size
  return [f'--logdir={logdir}', f'--server_address=unix:{logdir}/learner.sock',
          f'--game={args.game}', f'--num_envs={num_envs}',
          f'--env_batch_size={args.env_batch_size}', f'--unroll_length={args.unroll_length}',
          f'--batch_size={args.batch_size}', f'--learning_rate={args.learning_rate}',
          f'--adam_epsilon={args.adam_epsilon}',
          f'--entropy_cost={args.entropy_cost}', f'--reward_scaling={args.reward_scaling}',
          f'--stack_size={args.stack_size}',
          f'--lstm_size={args.lstm_size}', f'--epochs_per_step={args.epochs_per_step}',
          f'--{"" if args.full_action_space else "no"}full_action_space',
          f'--total_environment_frames={int(args.frame_budget)}',
          '--save_checkpoint_secs=600', f'--seed={args.seed}']


def run(args: argparse.Namespace, logdir: pathlib.Path, module: str = MODULE) -> dict:
  """Trains until the target, the frame budget or the time limit; returns what happened
  (`episode_follow.follow`). `module` is the file whose `--run_mode` processes run."""
  return episode_follow.train_and_follow(logdir, module, learner_flags(args, logdir),
                                         args.num_actors, args.window, args.target,
                                         args.max_minutes)


def parse_args(argv=None, description: str = __doc__.split('\n')[0],
               **defaults: Any) -> argparse.Namespace:
  """The command line (`sys.argv[1:]` by default); `defaults` replace the flags' defaults."""
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument('--game', default='Pong')
  parser.add_argument('--frame_budget', type=float, default=1e7)
  parser.add_argument('--max_minutes', type=float, default=60)
  parser.add_argument('--target', type=float, default=15.)
  parser.add_argument('--window', type=int, default=20)
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--env_batch_size', type=int, default=8)
  parser.add_argument('--unroll_length', type=int, default=20)
  parser.add_argument('--batch_size', type=int, default=4)
  parser.add_argument('--learning_rate', type=float, default=6e-4)
  parser.add_argument('--adam_epsilon', type=float, default=3.125e-7)
  parser.add_argument('--entropy_cost', type=float, default=0.01)
  parser.add_argument('--reward_scaling', type=float, default=1.,
                      help='Rewards (clipped to [-1, 1]) are multiplied by this in the loss.')
  parser.add_argument('--stack_size', type=int, default=4)
  parser.add_argument('--epochs_per_step', type=int, default=1,
                      help='Optimizer steps on each batch (V-trace corrects for the reuse).')
  parser.add_argument('--lstm_size', type=int, default=0)
  parser.add_argument('--full_action_space', action='store_true',
                      help='All 18 actions instead of the game\'s minimal set.')
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--logdir', default=None,
                      help='New directory that keeps the logs, checkpoints and TensorBoard '
                           'events (default: a temporary one).')
  parser.set_defaults(**defaults)
  return parser.parse_args(argv)


def run_and_report(args: argparse.Namespace, setting: str, module: str = MODULE) -> None:
  """Runs `module`'s learner and actors with `args` and prints `setting` (what ran) and the
  result."""
  result = process_group.run_in_logdir(args.logdir, lambda logdir: run(args, logdir, module))
  print(setting)
  episode_follow.print_result(result, args.window, args.target)


def setting(args: argparse.Namespace) -> str:
  """What runs, in one line."""
  memory = f'{args.stack_size} stacked frames' + (
      f' + LSTM {args.lstm_size}' if args.lstm_size else '')
  actions = 'all 18 actions' if args.full_action_space else 'minimal action set'
  return (f'atari vtrace on {args.game}, Nature-DQN torso on {memory}, {actions}, '
          f'{args.num_actors} actor(s) x {args.env_batch_size} env(s), unroll '
          f'{args.unroll_length}, batch {args.batch_size}, {args.epochs_per_step} optimizer '
          f'step(s) per batch, lr {args.learning_rate:g} (Adam epsilon {args.adam_epsilon:g}) '
          f'decaying to 0 over {args.frame_budget:g} frames, entropy {args.entropy_cost:g}, '
          f'rewards scaled by {args.reward_scaling:g}')


def main() -> None:
  args = parse_args()
  run_and_report(args, setting(args))


if __name__ == '__main__':
  if any(arg.startswith('--run_mode') for arg in sys.argv[1:]):
    entry_point_main()
  else:
    main()
