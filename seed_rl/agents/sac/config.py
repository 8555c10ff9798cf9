"""`SACConfig`: the SAC learner's typed configuration (the flags of `learner_flags`)."""

import dataclasses
from typing import ClassVar, Optional

from seed_rl.common.config import learner_config


@dataclasses.dataclass(frozen=True)
class SACConfig(learner_config.LearnerConfig):
  """What the SAC learner reads: `LearnerConfig`'s fields (with SAC's defaults of the shared
  ones) and its own (names and defaults of the original SEED RL).

  Attributes:
    replay_buffer_size: replay capacity in unrolls.
    replay_ratio: average number of times each unroll is replayed; a training step inserts
      `batch_size / replay_ratio` new unrolls.
    her_window_length: if set, hindsight experience replay on windows of this many steps (the
      environment must be a GoalEnv).
    her_substitution_probability: probability of replacing a step's desired goal by a goal
      achieved later (HER).
    entropy_cost: entropy cost (initial value if adapted).
    target_entropy: if set, the entropy cost is adapted to keep the policy entropy here.
    entropy_cost_adjustment_speed: speed of the entropy cost adaptation (multiplier of its
      log).
    max_abs_reward: rewards are clipped to [-max_abs_reward, max_abs_reward]; 0: no clipping.
    bootstrap_net: value of the next state in the Q targets: the target V network ('v') or the
      target Q of a policy action plus the entropy bonus ('q').
    update_target_every_n_step: training steps between updates of the target networks.
    polyak: target update `target = polyak * target + (1 - polyak) * online`.
  """
  flags_module: ClassVar[str] = 'seed_rl.agents.sac.learner_flags'

  batch_size: int = 256
  unroll_length: int = 1
  unroll_queue_max_size: int = 100
  replay_buffer_size: int = int(1e6)
  replay_ratio: float = 4.
  her_window_length: Optional[int] = None
  her_substitution_probability: float = 0.8
  entropy_cost: float = 0.01
  target_entropy: Optional[float] = None
  entropy_cost_adjustment_speed: float = 1.
  max_abs_reward: float = 0.
  bootstrap_net: str = 'v'
  update_target_every_n_step: int = 1
  polyak: float = 0.9
