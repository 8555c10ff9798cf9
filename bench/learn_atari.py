r"""Learning benchmark: V-trace, PPO or V-trace's loss in the on-policy agent on Pong, to +15.

  python -m bench.learn_atari [--agent vtrace|ppo|onpolicy_vtrace] [--frame_budget 1e7]
                              [--num_actors 2]
                              [--env_batch_size 8] [--max_minutes 120] [--logdir DIR]

Starts a real learner and `num_actors` actors of the package's Atari entry point (unix socket, as
`./run_local.sh atari vtrace` does: `seed_rl.environments.atari.vtrace_main --network=nature` for
`vtrace`, `seed_rl.environments.atari.ppo_main` for the on-policy agent) and follows the
learner's per-episode log lines. It stops when the mean raw return (the game score) of the last
`window` episodes exceeds `target`, when the learner has used
`frame_budget` environment frames, or after `max_minutes`. Prints the setting, the curve of
windowed mean returns against frames, and the frames and wall time to the target.

The network is the Nature-DQN torso (conv 32 8x8/4, 64 4x4/2, 64 3x3/1, dense 512) on the last
`stack_size` frames, stacked inside the network (the actors send single frames), the memory
Nature-DQN, A2C and PPO learn Pong with. It is much smaller than V-trace's default ImpalaDeep,
so a CPU machine runs it faster (docs/performance.md, Speed of the quick-start commands, has
both).

Its kernels start orthogonal (gain sqrt(2) in the torso, 0.01 for the policy logits, 1 for the
value) as PPO's Atari agents' do (the entry points' `--initialization`): with Keras's default
(`--initialization glorot`) the frames' moving parts barely reached the torso's output and the
network died in training (its first layer's units all but inactive) without learning Pong.

The agent acts with the game's minimal action set (6 actions for Pong) unless
`--full_action_space`. Rewards are clipped to [-1, 1], frames skipped 4 at a time, Adam's rate
decays linearly to 0 over the budget, the entropy cost is 0.01; `--reward_scaling` multiplies
the clipped rewards in the loss. The rest is each agent's (`AGENT_DEFAULTS`), for all three
the batches of Schulman et al. (2017)'s Atari PPO: training steps of 1,024 transitions (16
unrolls of 64), 3 epochs of 4 minibatches of 4 unrolls shuffled anew in each, gradient norm
clipped to 0.5, Adam 2.5e-4 (epsilon 1e-5), values normalized (PopArt):
- `vtrace`: the V-trace learner, V-trace lambda 0.95; it reached +15 after 4.2M, 4.9M and 4.3M
  frames (3 seeds). Trained as its entry point does (`VTRACE_ENTRY_POINT_TRAINING`:
  `--unroll_length 20 --batches_per_step 1 --epochs_per_step 1 --learning_rate 6e-4
  --adam_epsilon 3.125e-7 --clip_norm 0 --lambda_ 1 --no-popart`) it did not;
- `ppo`: the configurable on-policy agent with PPO's loss: clipping 0.1, GAE 0.95, advantages
  normalized per minibatch (`ppo_main`'s gin/ppo.gin, set again here by gin bindings);
- `onpolicy_vtrace`: the same agent with V-trace's loss through gin bindings
  (`ONPOLICY_VTRACE_LOSS`): V-trace targets and advantages (lambda 0.95, importance weights
  truncated at 1) and IMPALA's importance-weighted policy gradient, advantages not normalized.
The on-policy agent's actors wait while it trains (its default, so that each step trains on
the latest policy); with `--overlap_acting` they act meanwhile, as the V-trace learner's do.
"""

import argparse
import pathlib
from typing import Any, Optional, Sequence

from bench import episode_follow
from bench import process_group
from seed_rl.environments.atari import network_flags

# The package's entry point that runs each agent's learner and actors.
MODULES = {'vtrace': 'seed_rl.environments.atari.vtrace_main',
           'ppo': 'seed_rl.environments.atari.ppo_main',
           'onpolicy_vtrace': 'seed_rl.environments.atari.ppo_main'}
PPO_EPSILON = 0.1


# Each agent's defaults of the flags whose meaning or value depends on it: Schulman et al.
# (2017)'s Atari PPO batches for every agent, 1,024 transitions per training step (16 unrolls
# of 64 steps) in 3 epochs of 4 minibatches. V-trace's lambda is each V-trace agent's; PPO's GAE
# keeps its own 0.95. The on-policy agent here always normalizes its values (PopArt); the
# V-trace learner does with `--popart`.
_PPO_BATCHES = dict(unroll_length=64, batch_size=4, batches_per_step=4, epochs_per_step=3,
                    learning_rate=2.5e-4, adam_epsilon=1e-5, clip_norm=0.5)
AGENT_DEFAULTS = {
    'vtrace': dict(_PPO_BATCHES, lambda_=.95, popart=True),
    'ppo': _PPO_BATCHES,
    'onpolicy_vtrace': dict(_PPO_BATCHES, lambda_=.95),
}
# The V-trace entry point's way of training (IMPALA's) with a smaller batch: one optimizer step
# on each batch of 4 unrolls of 20, no clipping, values in reward units; V-trace's lambda 1. It
# did not reach +15 on Pong here (docs/tuning.md); `bench/pixel_bandit.py` trains V-trace this way.
VTRACE_ENTRY_POINT_TRAINING = dict(unroll_length=20, batch_size=4, batches_per_step=1,
                                   epochs_per_step=1, learning_rate=6e-4, adam_epsilon=3.125e-7,
                                   clip_norm=0., lambda_=1., popart=False)

# The gin bindings that make the configurable on-policy agent's loss V-trace's: its targets and
# advantages, and IMPALA's policy gradient (both truncate the importance weights at 1).
ONPOLICY_VTRACE_LOSS = ('GeneralizedOnPolicyLoss.policy_loss=@vtrace()',
                        'GeneralizedOnPolicyLoss.advantage_estimator=@VTrace()')


def learner_flags(args: argparse.Namespace, logdir: pathlib.Path) -> list[str]:
  """The flags of the learner and the actors."""
  num_envs = args.num_actors * args.env_batch_size
  common = [f'--logdir={logdir}',
            f'--server_address=unix:{logdir}/learner.sock', f'--game={args.game}',
            f'--num_envs={num_envs}', f'--env_batch_size={args.env_batch_size}',
            f'--unroll_length={args.unroll_length}', f'--batch_size={args.batch_size}',
            f'--batches_per_step={args.batches_per_step}',
            f'--epochs_per_step={args.epochs_per_step}',
            f'--learning_rate={args.learning_rate}', f'--clip_norm={args.clip_norm}',
            f'--stack_size={args.stack_size}',
            f'--initialization={args.initialization}',
            f'--{"" if args.full_action_space else "no"}full_action_space',
            f'--total_environment_frames={int(args.frame_budget)}',
            '--save_checkpoint_secs=600', f'--seed={args.seed}']
  if args.agent == 'vtrace':
    return common + ['--network=nature', f'--adam_epsilon={args.adam_epsilon}',
                     f'--entropy_cost={args.entropy_cost}',
                     f'--reward_scaling={args.reward_scaling}', f'--lambda_={args.lambda_}',
                     f'--{"" if args.popart else "no"}popart']
  if args.agent == 'ppo':
    loss = [f'ppo.epsilon={args.ppo_epsilon}', 'ppo.normalize_advantages=True']
  else:
    loss = list(ONPOLICY_VTRACE_LOSS) + [f'VTrace.lambda_={args.lambda_}']
  gin_bindings = [f'KLPolicyRegularizer.entropy={args.entropy_cost}'] + loss + [
      'GeneralizedOnPolicyLoss.max_abs_reward=1.',
      f'GeneralizedOnPolicyLoss.reward_scaling={args.reward_scaling}',
      'GeneralizedOnPolicyLoss.baseline_cost=0.5',
      f'tf.keras.optimizers.Adam.epsilon={args.adam_epsilon}']
  return common + ['--batch_mode=shuffle',
                   '--lr_decay_multiplier=0', '--log_episode_frequency=1',
                   f'--{"no" if args.overlap_acting else ""}block_inference_on_training'
                   ] + [f'--gin_bindings={binding}' for binding in gin_bindings]


def run(args: argparse.Namespace, logdir: pathlib.Path, module: Optional[str] = None,
        extra_flags: Sequence[str] = ()) -> dict:
  """Trains until the target, the frame budget or the time limit; returns what happened
  (`episode_follow.follow`). `module` is the one whose `--run_mode` processes run (default: the
  agent's entry point, `MODULES`), with `extra_flags` after the bench's own."""
  return episode_follow.train_and_follow(logdir, module or MODULES[args.agent],
                                         learner_flags(args, logdir) + list(extra_flags),
                                         args.num_actors, args.window, args.target,
                                         args.max_minutes)


def parse_args(argv=None, description: str = __doc__.split('\n')[0],
               agent_defaults: Optional[dict[str, dict[str, Any]]] = None,
               **defaults: Any) -> argparse.Namespace:
  """The command line (`sys.argv[1:]` by default); `defaults` replace the flags' defaults,
  `agent_defaults` (`{agent: {flag: value}}`) those of `AGENT_DEFAULTS` for that agent."""
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument('--agent', choices=sorted(AGENT_DEFAULTS), default='vtrace')
  parser.add_argument('--game', default='Pong')
  parser.add_argument('--frame_budget', type=float, default=1e7)
  parser.add_argument('--max_minutes', type=float, default=120,
                      help='A limit in wall time (docs/tuning.md, Atari, has how long each agent '
                           'takes).')
  parser.add_argument('--target', type=float, default=15.)
  parser.add_argument('--window', type=int, default=20)
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--env_batch_size', type=int, default=8)
  parser.add_argument('--unroll_length', type=int)
  parser.add_argument('--batch_size', type=int,
                      help='Unrolls per minibatch (one optimizer step).')
  parser.add_argument('--batches_per_step', type=int,
                      help='Minibatches of --batch_size unrolls in each epoch of a training '
                           'step, shuffled anew in each.')
  parser.add_argument('--learning_rate', type=float)
  parser.add_argument('--adam_epsilon', type=float)
  parser.add_argument('--clip_norm', type=float,
                      help='Global gradient norm clipping, 0: none (default 0.5).')
  parser.add_argument('--lambda_', type=float,
                      help='vtrace, onpolicy_vtrace: V-trace\'s lambda (0.95).')
  parser.add_argument('--popart', action=argparse.BooleanOptionalAction,
                      help='vtrace: learn normalized values (PopArt, the default, as the '
                           'on-policy agent always does here; --no-popart: values in reward '
                           'units, as the original).')
  parser.add_argument('--overlap_acting', action='store_true',
                      help='ppo, onpolicy_vtrace: the actors go on acting while a step trains '
                           '(--noblock_inference_on_training), as the V-trace learner\'s always '
                           'do; by default they wait, so each step trains on the latest policy.')
  parser.add_argument('--ppo_epsilon', type=float,
                      help=f'PPO: the clipping of the probability ratio (default {PPO_EPSILON}).')
  parser.add_argument('--entropy_cost', type=float, default=0.01)
  parser.add_argument('--reward_scaling', type=float, default=1.,
                      help='Rewards (clipped to [-1, 1]) are multiplied by this in the loss.')
  parser.add_argument('--stack_size', type=int, default=4)
  parser.add_argument('--epochs_per_step', type=int,
                      help='Passes over each batch (V-trace corrects for the reuse).')
  parser.add_argument('--initialization', choices=network_flags.INITIALIZATIONS,
                      default='orthogonal',
                      help='The network\'s initial kernels: orthogonal (gain sqrt(2) in the '
                           'torso, 0.01 for the policy, 1 for the value) or glorot (Keras\'s '
                           'default).')
  parser.add_argument('--full_action_space', action='store_true',
                      help='All 18 actions instead of the game\'s minimal set.')
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--logdir', default=None,
                      help='New directory that keeps the logs, checkpoints and TensorBoard '
                           'events (default: a temporary one).')
  parser.set_defaults(**defaults)
  args = parser.parse_args(argv)
  if args.agent != 'ppo' and args.ppo_epsilon is not None:
    parser.error('--ppo_epsilon is for --agent=ppo')
  if args.agent == 'ppo' and args.lambda_ is not None:
    parser.error('--lambda_ is for --agent=vtrace or onpolicy_vtrace (PPO\'s GAE keeps 0.95)')
  if args.agent == 'ppo' and args.ppo_epsilon is None:
    args.ppo_epsilon = PPO_EPSILON
  for name, value in dict(AGENT_DEFAULTS[args.agent],
                          **(agent_defaults or {}).get(args.agent, {})).items():
    if getattr(args, name) is None:
      setattr(args, name, value)
  if args.agent != 'vtrace' and args.popart is not None:
    parser.error('--popart is for --agent=vtrace (the on-policy agent here always normalizes '
                 'its values with PopArt)')
  if args.agent == 'vtrace' and args.overlap_acting:
    parser.error('--overlap_acting is for --agent=ppo or onpolicy_vtrace (the V-trace learner\'s '
                 'actors always act while it trains)')
  return args


def run_and_report(args: argparse.Namespace, setting: str, module: Optional[str] = None,
                   extra_flags: Sequence[str] = ()) -> None:
  """Runs `module`'s learner and actors (default: the agent's entry point) with `args` (and
  `extra_flags`) and prints `setting` (what ran) and the result."""
  result = process_group.run_in_logdir(args.logdir,
                                       lambda logdir: run(args, logdir, module, extra_flags))
  print(setting)
  episode_follow.print_result(result, args.window, args.target)


def setting(args: argparse.Namespace) -> str:
  """What runs, in one line."""
  memory = f'{args.stack_size} stacked frames'
  actions = 'all 18 actions' if args.full_action_space else 'minimal action set'
  clipping = (f'gradient norm clipped to {args.clip_norm:g}' if args.clip_norm else
              'no gradient clipping')
  if args.agent == 'vtrace':
    batches = (f'batch {args.batch_size}, {args.epochs_per_step} optimizer step(s) per batch'
               if args.batches_per_step == 1 else
               f'{args.batches_per_step} minibatches of {args.batch_size} unrolls per step, '
               f'{args.epochs_per_step} epochs')
    training = (f'{batches}, lambda {args.lambda_:g}' +
                (', values normalized (PopArt)' if args.popart else ''))
  else:
    loss = (f'clipping {args.ppo_epsilon:g}' if args.agent == 'ppo' else
            f'V-trace\'s loss (lambda {args.lambda_:g})')
    training = (f'{args.batches_per_step} minibatches of {args.batch_size} unrolls per step, '
                f'{args.epochs_per_step} epochs, {loss}, acting '
                f'{"overlapping" if args.overlap_acting else "paused during"} training')
  return (f'atari {args.agent} on {args.game}, Nature-DQN torso ({args.initialization} '
          f'initialization) on {memory}, {actions}, '
          f'{args.num_actors} actor(s) x {args.env_batch_size} env(s), unroll '
          f'{args.unroll_length}, {training}, lr {args.learning_rate:g} (Adam epsilon '
          f'{args.adam_epsilon:g}) decaying to 0 over {args.frame_budget:g} frames, {clipping}, '
          f'entropy {args.entropy_cost:g}, rewards scaled by {args.reward_scaling:g}')


def main() -> None:
  args = parse_args()
  run_and_report(args, setting(args))


if __name__ == '__main__':
  main()
