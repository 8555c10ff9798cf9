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
    num_envs, num_eval_envs: environments served, of which the last `num_eval_envs` evaluate.
    total_environment_frames: the frame budget.
    num_action_repeats: environment frames per agent step.
  """
  batch_mode: str = 'split'
  batch_size: int = 2
  batches_per_step: int = 1
  epochs_per_step: int = 1
  unroll_length: int = 100
  block_inference_on_training: bool = True
  clip_norm: float = None
  num_envs: int = 4
  num_eval_envs: int = 0
  total_environment_frames: int = int(1e9)
  num_action_repeats: int = 1

  @property
  def virtual_batch_size(self) -> int:
    """Unrolls one training step consumes."""
    return self.batch_size * self.batches_per_step

  @property
  def num_training_envs(self) -> int:
    return self.num_envs - self.num_eval_envs

  def is_training_env(self, env_id: int) -> bool:
    return env_id < self.num_training_envs
