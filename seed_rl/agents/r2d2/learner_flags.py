"""Flags of the R2D2 learner (names and defaults of the original SEED RL).

Imported by the R2D2 `*_main.py` entry points, which read them into an `R2D2Config`
(`config.py`, whose field defaults are these flags' defaults).
"""

import functools

from absl import flags

from seed_rl.agents.r2d2 import config as config_lib
from seed_rl.common.config import learner_flags

define = functools.partial(learner_flags.define_agent_flag, agent='R2D2')

learner_flags.declare_agent_defaults('R2D2', config_lib.R2D2Config)

define(flags.DEFINE_float, 'replay_ratio', 1.5,
       'Average number of times each unroll is replayed; a training step inserts '
       'batch_size / replay_ratio new unrolls.')
define(flags.DEFINE_integer, 'update_target_every_n_step', 2500,
       'Training steps between copies of the online network to the target one.')
define(flags.DEFINE_integer, 'replay_buffer_size', 100,
       'Replay capacity in unrolls (the R2D2 paper and the GCP scripts use 100000).')
define(flags.DEFINE_integer, 'replay_buffer_min_size', 10,
       'Training starts once this many unrolls were inserted.')
define(flags.DEFINE_float, 'priority_exponent', 0.9, 'Prioritized replay exponent alpha.')
define(flags.DEFINE_integer, 'burn_in', 40,
       'Steps before each unroll used only to warm up the recurrent state.')
define(flags.DEFINE_float, 'importance_sampling_exponent', 0.6,
       'Importance sampling exponent beta of prioritized replay.')
define(flags.DEFINE_float, 'clip_norm', 40, 'Global gradient norm clipping; 0 disables it.')
define(flags.DEFINE_float, 'value_function_rescaling_epsilon', 1e-3,
       'Epsilon of the invertible value rescaling h(x).')
define(flags.DEFINE_integer, 'n_steps', 5, 'Steps of the n-step Bellman targets.')
define(flags.DEFINE_float, 'exploration_epsilon', 0.4,
       'Training environment i of n explores with epsilon '
       'exploration_epsilon^(1 + exploration_alpha * i / (n - 1)) (Ape-X and R2D2: 0.4).')
define(flags.DEFINE_float, 'exploration_alpha', 7.,
       'Exponent spread of the training environments\' epsilons (Ape-X and R2D2: 7).')
define(flags.DEFINE_float, 'eval_epsilon', 1e-3,
       'Epsilon of the evaluation environments (the num_eval_envs highest ids).')
