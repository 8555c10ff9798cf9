"""`VTraceConfig`: the V-trace learner's typed configuration (the flags of `learner_flags`)."""

import dataclasses
from typing import ClassVar, Optional

from seed_rl.common.config import learner_config


@dataclasses.dataclass(frozen=True)
class VTraceConfig(learner_config.LearnerConfig):
  """What the V-trace learner reads: `LearnerConfig`'s fields and its own (names and defaults
  of the original SEED RL, except the additions marked so).

  Attributes:
    entropy_cost: entropy cost (initial value if adapted).
    target_entropy: if set, the entropy cost is adapted to keep the policy entropy here.
    entropy_cost_adjustment_speed: speed of the entropy cost adaptation (multiplier of its
      log).
    baseline_cost: weight of the value loss.
    kl_cost: weight of the KL(behaviour || target) loss.
    lambda_: lambda of V-trace (trace mixing).
    max_abs_reward: rewards are clipped to [-max_abs_reward, max_abs_reward]; 0: no clipping.
    reward_scaling: rewards are multiplied by this (after clipping) in the loss. Not in the
      original.
    epochs_per_step: optimizer steps on each batch of unrolls. Not in the original.
    batches_per_step: batches of `batch_size` unrolls per training step, each epoch stepping
      on each, shuffled anew. Not in the original.
    clip_norm: global gradient norm clipping; 0: none.
    popart: learn values normalized by the statistics of the V-trace targets (PopArt). Not in
      the original.
  """
  flags_module: ClassVar[str] = 'seed_rl.agents.vtrace.learner_flags'

  entropy_cost: float = 0.00025
  target_entropy: Optional[float] = None
  entropy_cost_adjustment_speed: float = 10.
  baseline_cost: float = .5
  kl_cost: float = 0.
  lambda_: float = 1.
  max_abs_reward: float = 0.
  reward_scaling: float = 1.
  epochs_per_step: int = 1
  batches_per_step: int = 1
  clip_norm: float = 0.
  popart: bool = False
