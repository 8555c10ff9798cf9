"""The configurable on-policy learner's configuration: `TrainingConfig` (TensorFlow-free).

`learner_flags.training_config_from_flags` derives it from the flags, where batch and step sizes
may be given in unrolls or in transitions.
"""

import dataclasses

BATCH_MODES = ('repeat', 'shuffle', 'split', 'split_with_advantage_recomputation')


@dataclasses.dataclass
class TrainingConfig:
  """How the learner batches and trains (names and defaults of the original).

  A training step takes `virtual_batch_size = batch_size * batches_per_step` unrolls of
  `unroll_length` steps from the queue and makes `epochs_per_step` passes over them, each pass
  `batches_per_step` optimizer steps on minibatches of `batch_size` unrolls (or, in the `split`
  modes, of `batch_size * unroll_length` single transitions).

  Attributes:
    batch_mode: `repeat` (the same minibatches every epoch), `shuffle` (unrolls reshuffled
      every epoch), `split` (advantages computed once, then shuffled transitions) or
      `split_with_advantage_recomputation` (advantages recomputed every epoch).
    batch_size: unrolls per minibatch.
    batches_per_step: minibatches (optimizer steps) per epoch.
    epochs_per_step: passes over the step's unrolls.
    unroll_length: agent steps per unroll (plus one bootstrap step).
    block_inference_on_training: inference waits while a training step runs, so that every
      unroll is acted by the latest weights (on-policy).
    clip_norm: global gradient norm clipping; None or 0: none.

  The environments, the frame budget and the rest are the runtime's flags, read from the
  learner's config as for every agent.
  """
  batch_mode: str = 'split'
  batch_size: int = 2
  batches_per_step: int = 1
  epochs_per_step: int = 1
  unroll_length: int = 100
  block_inference_on_training: bool = True
  clip_norm: float = None

  @property
  def virtual_batch_size(self) -> int:
    """Unrolls one training step consumes."""
    return self.batch_size * self.batches_per_step
