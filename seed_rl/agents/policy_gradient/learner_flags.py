"""Flags of the configurable on-policy learner, and their derivation into a `TrainingConfig`.

Batch and step sizes can be given in unrolls (`--batch_size`, `--batches_per_step`) or in
transitions (`--batch_size_transitions`, `--step_size_transitions`, as in "What matters in
on-policy RL": 2048-transition steps of 64-transition minibatches); `training_config_from_flags`
turns them into unrolls and refuses sizes that do not divide.
"""

from typing import Any

from absl import flags

from seed_rl.agents.policy_gradient import learner_config
from seed_rl.common.config import learner_flags

define = learner_flags.define_agent_flag

learner_flags.set_agent_defaults(batch_size=2, unroll_length=100, log_episode_frequency=10,
                                 discounting=.99)

define(flags.DEFINE_enum, 'batch_mode', 'split',
       'How the epochs of a training step see its unrolls: repeat (the same minibatches), '
       'shuffle (unrolls reshuffled every epoch), split (advantages computed once, then '
       'minibatches of single transitions; feed-forward agents only) or '
       'split_with_advantage_recomputation (as split, advantages recomputed every epoch).',
       enum_values=list(learner_config.BATCH_MODES))
define(flags.DEFINE_float, 'clip_norm', None, 'Global gradient norm clipping; unset: none.')
define(flags.DEFINE_bool, 'block_inference_on_training', True,
       'Inference waits while a training step runs, so that actors always act with the latest '
       'weights (on-policy).')
define(flags.DEFINE_integer, 'batch_size_transitions', 0,
       'Minibatch size in transitions (a multiple of --unroll_length); 0: use --batch_size.')
define(flags.DEFINE_integer, 'batches_per_step', 1,
       'Minibatches (optimizer steps) per epoch of a training step.')
define(flags.DEFINE_integer, 'step_size_unroll', 0,
       'Unrolls per training step (a multiple of the minibatch size); 0: use '
       '--batches_per_step.')
define(flags.DEFINE_integer, 'step_size_transitions', 0,
       'Transitions per training step (a multiple of the minibatch size); 0: use '
       '--batches_per_step. With --unroll_length=0 it also sets the unroll length: '
       'step_size_transitions / num_envs.')
define(flags.DEFINE_integer, 'epochs_per_step', 1, 'Passes over the unrolls of a training step.')


def _divide(numerator: int, denominator: int, what: str) -> int:
  if denominator <= 0 or numerator % denominator:
    raise ValueError(what)
  return numerator // denominator


def derive_sizes(num_envs: int, unroll_length: int, batch_size: int,
                 batch_size_transitions: int, batches_per_step: int, step_size_unroll: int,
                 step_size_transitions: int) -> tuple:
  """`(unroll_length, batch_size, batches_per_step)` in unrolls from the flags' values.

  Raises:
    ValueError: naming the flags whose values conflict or do not divide.
  """
  if unroll_length <= 0:
    step = step_size_transitions or batch_size_transitions * batches_per_step
    if step <= 0:
      raise ValueError('--unroll_length=0 derives the unroll length from '
                       '--step_size_transitions (or --batch_size_transitions x '
                       '--batches_per_step); set one of them or a positive --unroll_length.')
    unroll_length = _divide(
        step, num_envs, f'--unroll_length=0 makes every environment contribute one unroll per '
        f'step, so the step of {step} transitions must be a multiple of --num_envs={num_envs}.')
  if (batch_size > 0) == (batch_size_transitions > 0):
    raise ValueError(f'Give exactly one of --batch_size (={batch_size}) and '
                     f'--batch_size_transitions (={batch_size_transitions}); set the other to 0.')
  if batch_size_transitions:
    batch_size = _divide(
        batch_size_transitions, unroll_length,
        f'--batch_size_transitions={batch_size_transitions} must be a multiple of '
        f'--unroll_length={unroll_length}.')
  given = [name for name, value in [('--step_size_unroll', step_size_unroll),
                                    ('--step_size_transitions', step_size_transitions)] if value]
  if batches_per_step != 1:
    given.insert(0, '--batches_per_step')
  if len(given) > 1:
    raise ValueError(f'Give only one of {" and ".join(given)}: each sets the number of '
                     'minibatches per training step.')
  if step_size_unroll:
    batches_per_step = _divide(
        step_size_unroll, batch_size, f'--step_size_unroll={step_size_unroll} must be a '
        f'multiple of the minibatch size of {batch_size} unrolls.')
  elif step_size_transitions:
    batches_per_step = _divide(
        step_size_transitions, batch_size * unroll_length,
        f'--step_size_transitions={step_size_transitions} must be a multiple of the minibatch '
        f'size of {batch_size * unroll_length} transitions ({batch_size} unrolls of '
        f'{unroll_length} steps).')
  if batches_per_step <= 0:
    raise ValueError(f'--batches_per_step must be positive, got {batches_per_step}.')
  return unroll_length, batch_size, batches_per_step


def training_config_from_flags(config: Any) -> learner_config.TrainingConfig:
  """The `TrainingConfig` of `config` (absl `FLAGS` or an object with the same attributes)."""
  unroll_length, batch_size, batches_per_step = derive_sizes(
      config.num_envs, config.unroll_length, config.batch_size, config.batch_size_transitions,
      config.batches_per_step, config.step_size_unroll, config.step_size_transitions)
  if config.epochs_per_step <= 0:
    raise ValueError(f'--epochs_per_step must be positive, got {config.epochs_per_step}.')
  return learner_config.TrainingConfig(
      batch_mode=config.batch_mode, batch_size=batch_size, batches_per_step=batches_per_step,
      epochs_per_step=config.epochs_per_step, unroll_length=unroll_length,
      block_inference_on_training=config.block_inference_on_training,
      clip_norm=config.clip_norm)
