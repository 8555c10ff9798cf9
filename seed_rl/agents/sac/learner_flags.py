"""Flags of the SAC learner (names and defaults of the original SEED RL).

Imported by the SAC `*_main.py` entry points, which read them into an `SACConfig`
(`config.py`, whose field defaults are these flags' defaults).
"""

import functools

from absl import flags

from seed_rl.agents.sac import config as config_lib
from seed_rl.common.config import learner_flags

define = functools.partial(learner_flags.define_agent_flag, agent='SAC')

learner_flags.declare_agent_defaults('SAC', config_lib.SACConfig)

define(flags.DEFINE_integer, 'replay_buffer_size', int(1e6), 'Replay capacity in unrolls.')
define(flags.DEFINE_float, 'replay_ratio', 4.,
       'Average number of times each unroll is replayed; a training step inserts '
       'batch_size / replay_ratio new unrolls.')
define(flags.DEFINE_integer, 'her_window_length', None,
       'If set, hindsight experience replay: windows of this many steps are stored and goals '
       'are substituted within them (the environment must be a GoalEnv).')
define(flags.DEFINE_float, 'her_substitution_probability', 0.8,
       'Probability of replacing a step\'s desired goal by a goal achieved later (HER).')
define(flags.DEFINE_float, 'entropy_cost', 0.01, 'Entropy cost (initial value if adapted).')
define(flags.DEFINE_float, 'target_entropy', None,
       'If set, the entropy cost is adapted to keep the policy entropy here (usually minus '
       'the action dimension; mujoco.sac_main sets that for a Box action space when not '
       'given).')
define(flags.DEFINE_float, 'entropy_cost_adjustment_speed', 1.,
       'Speed of the entropy cost adaptation (multiplier of its log).')
define(flags.DEFINE_float, 'max_abs_reward', 0.,
       'Rewards are clipped to [-max_abs_reward, max_abs_reward]; 0: no clipping.')
define(flags.DEFINE_enum, 'bootstrap_net', 'v',
       'Value of the next state in the Q targets: the target V network (v), or the target Q of '
       'an action of the policy plus the entropy bonus (q).', enum_values=['q', 'v'])
define(flags.DEFINE_integer, 'update_target_every_n_step', 1,
       'Training steps between updates of the target networks.')
define(flags.DEFINE_float, 'polyak', 0.9,
       'Target update: target = polyak * target + (1 - polyak) * online.')
