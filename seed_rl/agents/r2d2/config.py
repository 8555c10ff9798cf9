"""`R2D2Config`: the R2D2 learner's typed configuration (the flags of `learner_flags`)."""

import dataclasses
from typing import ClassVar

from seed_rl.common.config import learner_config


@dataclasses.dataclass(frozen=True)
class R2D2Config(learner_config.LearnerConfig):
  """What the R2D2 learner reads: `LearnerConfig`'s fields (with R2D2's defaults of the shared
  ones) and its own (names and defaults of the original SEED RL).

  Attributes:
    replay_ratio: average number of times each unroll is replayed; a training step inserts
      `batch_size / replay_ratio` new unrolls.
    update_target_every_n_step: training steps between copies of the online network to the
      target one.
    replay_buffer_size: replay capacity in unrolls.
    replay_buffer_min_size: training starts once this many unrolls were inserted.
    priority_exponent: prioritized replay exponent alpha.
    burn_in: steps before each unroll used only to warm up the recurrent state.
    importance_sampling_exponent: importance sampling exponent beta of prioritized replay.
    clip_norm: global gradient norm clipping; 0: none.
    value_function_rescaling_epsilon: epsilon of the invertible value rescaling h(x).
    n_steps: steps of the n-step Bellman targets.
    exploration_epsilon: training environment i of n explores with epsilon
      `exploration_epsilon^(1 + exploration_alpha * i / (n - 1))`.
    exploration_alpha: exponent spread of the training environments' epsilons.
    eval_epsilon: epsilon of the evaluation environments.
  """
  flags_module: ClassVar[str] = 'seed_rl.agents.r2d2.learner_flags'

  batch_size: int = 64
  unroll_queue_max_size: int = 100
  discounting: float = .997
  replay_ratio: float = 1.5
  update_target_every_n_step: int = 2500
  replay_buffer_size: int = 100
  replay_buffer_min_size: int = 10
  priority_exponent: float = 0.9
  burn_in: int = 40
  importance_sampling_exponent: float = 0.6
  clip_norm: float = 40.
  value_function_rescaling_epsilon: float = 1e-3
  n_steps: int = 5
  exploration_epsilon: float = 0.4
  exploration_alpha: float = 7.
  eval_epsilon: float = 1e-3
