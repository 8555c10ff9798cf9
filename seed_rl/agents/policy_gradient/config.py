"""`PolicyGradientConfig`: the on-policy learner's typed configuration (the flags of
`learner_flags`; the loss, networks and optimizer are configured with gin)."""

import dataclasses
from typing import ClassVar, Optional

from seed_rl.agents.policy_gradient import learner_config
from seed_rl.common.config import learner_config as common_learner_config


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


@dataclasses.dataclass(frozen=True)
class PolicyGradientConfig(common_learner_config.LearnerConfig):
  """What the on-policy learner reads: `LearnerConfig`'s fields (with its defaults of the shared
  ones) and its own. Batch and step sizes may be given in unrolls or in transitions;
  `training_config` derives them in unrolls.

  Attributes:
    batch_mode: how the epochs of a step see its unrolls (`learner_config.BATCH_MODES`).
    clip_norm: global gradient norm clipping; None: none.
    block_inference_on_training: inference waits while a training step runs (on-policy).
    batch_size_transitions: minibatch size in transitions; 0: use `batch_size`.
    batches_per_step: minibatches (optimizer steps) per epoch of a training step.
    step_size_unroll: unrolls per training step; 0: use `batches_per_step`.
    step_size_transitions: transitions per training step; 0: use `batches_per_step`. With
      `unroll_length=0` it also sets the unroll length.
    epochs_per_step: passes over the unrolls of a training step.
  """
  # `batch_size` and `unroll_length` may be 0, derived from the sizes in transitions (which
  # `training_config` checks).
  positive_fields: ClassVar[tuple] = tuple(
      name for name in common_learner_config.POSITIVE_FIELDS
      if name not in ('batch_size', 'unroll_length'))
  flags_module: ClassVar[str] = 'seed_rl.agents.policy_gradient.learner_flags'

  batch_size: int = 2
  log_episode_frequency: int = 10
  batch_mode: str = 'split'
  clip_norm: Optional[float] = None
  block_inference_on_training: bool = True
  batch_size_transitions: int = 0
  batches_per_step: int = 1
  step_size_unroll: int = 0
  step_size_transitions: int = 0
  epochs_per_step: int = 1

  @property
  def training_config(self) -> learner_config.TrainingConfig:
    """The sizes in unrolls (`learner_flags.derive_sizes`) and how to train on them.

    Raises:
      ValueError: naming the fields whose values conflict or do not divide.
    """
    unroll_length, batch_size, batches_per_step = derive_sizes(
        self.num_envs, self.unroll_length, self.batch_size, self.batch_size_transitions,
        self.batches_per_step, self.step_size_unroll, self.step_size_transitions)
    if self.epochs_per_step <= 0:
      raise ValueError(f'--epochs_per_step must be positive, got {self.epochs_per_step}.')
    return learner_config.TrainingConfig(
        batch_mode=self.batch_mode, batch_size=batch_size, batches_per_step=batches_per_step,
        epochs_per_step=self.epochs_per_step, unroll_length=unroll_length,
        block_inference_on_training=self.block_inference_on_training,
        clip_norm=self.clip_norm)
