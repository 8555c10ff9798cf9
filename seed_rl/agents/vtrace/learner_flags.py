"""Flags of the V-trace learner (names and defaults of the original SEED RL).

Imported by the V-trace `*_main.py` entry points, which read them into a `VTraceConfig`
(`config.py`, whose field defaults are these flags'). The learner reads that config, so
importing the learner as a library defines no flags.
"""

import functools

from absl import flags

from seed_rl.agents.vtrace import config as config_lib
from seed_rl.common.config import learner_flags

define = functools.partial(learner_flags.define_agent_flag, agent='V-trace')

learner_flags.declare_agent_defaults('V-trace', config_lib.VTraceConfig)

define(flags.DEFINE_float, 'entropy_cost', 0.00025, 'Entropy cost (initial value if adapted).')
define(flags.DEFINE_float, 'target_entropy', None,
       'If set, the entropy cost is adapted to keep the policy entropy here.')
define(flags.DEFINE_float, 'entropy_cost_adjustment_speed', 10.,
       'Speed of the entropy cost adaptation (multiplier of its log).')
define(flags.DEFINE_float, 'baseline_cost', .5, 'Weight of the value loss.')
define(flags.DEFINE_float, 'kl_cost', 0., 'Weight of the KL(behaviour || target) loss.')
define(flags.DEFINE_float, 'lambda_', 1., 'Lambda of V-trace (trace mixing).')
define(flags.DEFINE_float, 'max_abs_reward', 0.,
       'Rewards are clipped to [-max_abs_reward, max_abs_reward]; 0: no clipping.')
define(flags.DEFINE_float, 'reward_scaling', 1.,
       'Rewards are multiplied by this (after clipping) in the loss; episode returns are '
       'reported unscaled.')
define(flags.DEFINE_integer, 'epochs_per_step', 1,
       'Optimizer steps on each batch of unrolls (1: the original\'s single pass; more reuse '
       'each batch, V-trace correcting for the policy that moved since acting).')
define(flags.DEFINE_integer, 'batches_per_step', 1,
       'Batches of --batch_size unrolls per training step (1: the original\'s); with more, each '
       'epoch takes one optimizer step on each, the unrolls shuffled anew (as the on-policy '
       'agent\'s --batch_mode=shuffle). Not in the original.')
define(flags.DEFINE_float, 'clip_norm', 0.,
       'Global gradient norm clipping; 0 disables it (the original did not clip).')
define(flags.DEFINE_bool, 'popart', False,
       'Learn the values normalized by the mean and std of all V-trace targets so far (PopArt, '
       'the outputs kept the same when the statistics move); the policy gradient\'s advantages '
       'are divided by the same std. Not in the original.')
