"""Flags of the configurable on-policy learner, and their derivation into a `TrainingConfig`.

Batch and step sizes can be given in unrolls (`--batch_size`, `--batches_per_step`) or in
transitions (`--batch_size_transitions`, `--step_size_transitions`, as in "What matters in
on-policy RL": 2048-transition steps of 64-transition minibatches); `training_config_from_flags`
turns them into unrolls and refuses sizes that do not divide.
"""

import functools
from typing import Any

from absl import flags

from seed_rl.agents.policy_gradient import config as config_lib
from seed_rl.agents.policy_gradient import learner_config
from seed_rl.common.config import learner_flags

define = functools.partial(learner_flags.define_agent_flag, agent='on-policy')
# The original's names of the size derivation.
derive_sizes = config_lib.derive_sizes

learner_flags.declare_agent_defaults('on-policy', config_lib.PolicyGradientConfig)

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


def training_config_from_flags(config: Any = None) -> learner_config.TrainingConfig:
  """The `TrainingConfig` of `config` (absl flags, by default `FLAGS`, or a
  `PolicyGradientConfig`).

  Raises:
    ValueError: naming the flags whose values conflict or do not divide.
  """
  return config_lib.PolicyGradientConfig.of(config).training_config
