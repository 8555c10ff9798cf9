"""Batch and step sizes given in unrolls or transitions become unrolls; conflicts are refused."""

import dataclasses

import pytest

from seed_rl.agents.policy_gradient import config as config_lib
from seed_rl.agents.policy_gradient import learner_flags


def _derive(num_envs=4, unroll_length=100, batch_size=2, batch_size_transitions=0,
            batches_per_step=1, step_size_unroll=0, step_size_transitions=0):
  return learner_flags.derive_sizes(num_envs, unroll_length, batch_size, batch_size_transitions,
                                    batches_per_step, step_size_unroll, step_size_transitions)


def test_sizes_in_unrolls_are_kept():
  assert _derive(batch_size=8, batches_per_step=3) == (100, 8, 3)


def test_the_halfcheetah_baseline_in_transitions():
  # 2048-transition steps of 64-transition minibatches with unrolls of 16 steps.
  assert _derive(num_envs=256, unroll_length=16, batch_size=0, batch_size_transitions=64,
                 step_size_transitions=2048) == (16, 4, 32)


def test_step_size_in_unrolls():
  assert _derive(batch_size=4, step_size_unroll=12) == (100, 4, 3)


def test_unroll_length_from_the_step_size_and_the_environments():
  assert _derive(num_envs=32, unroll_length=0, batch_size=0, batch_size_transitions=64,
                 step_size_transitions=2048) == (64, 1, 32)
  assert _derive(num_envs=4, unroll_length=0, batch_size=0, batch_size_transitions=40,
                 batches_per_step=2) == (20, 2, 2)


@pytest.mark.parametrize('kwargs, message', [
    (dict(batch_size=2, batch_size_transitions=64), 'exactly one of --batch_size'),
    (dict(batch_size=0, batch_size_transitions=0), 'exactly one of --batch_size'),
    (dict(batch_size=0, batch_size_transitions=150), 'multiple of --unroll_length=100'),
    (dict(batch_size=4, step_size_unroll=10), '--step_size_unroll=10 must be a multiple'),
    (dict(batch_size=1, step_size_transitions=250), 'minibatch size of 100 transitions'),
    (dict(batches_per_step=2, step_size_unroll=4), 'only one of --batches_per_step and '
     '--step_size_unroll'),
    (dict(step_size_unroll=4, step_size_transitions=400), 'only one of --step_size_unroll'),
    (dict(unroll_length=0), '--unroll_length=0 derives'),
    (dict(num_envs=3, unroll_length=0, batch_size=0, batch_size_transitions=64,
          step_size_transitions=2048), 'multiple of --num_envs=3'),
    (dict(batches_per_step=0), '--batches_per_step must be positive'),
])
def test_conflicting_or_indivisible_sizes_are_refused(kwargs, message):
  with pytest.raises(ValueError, match=message):
    _derive(**kwargs)


def test_training_config_of_a_typed_config():
  typed = config_lib.PolicyGradientConfig(
      num_envs=8, unroll_length=10, batch_size=0, batch_size_transitions=20,
      batches_per_step=1, step_size_unroll=0, step_size_transitions=80, epochs_per_step=3,
      batch_mode='shuffle', block_inference_on_training=False, clip_norm=0.5)
  config = learner_flags.training_config_from_flags(typed)
  assert config == typed.training_config
  assert (config.batch_size, config.batches_per_step, config.virtual_batch_size) == (2, 4, 8)
  assert config.epochs_per_step == 3 and config.batch_mode == 'shuffle'
  assert config.clip_norm == 0.5 and not config.block_inference_on_training
  with pytest.raises(ValueError, match='--epochs_per_step must be positive'):
    dataclasses.replace(typed, epochs_per_step=0).training_config
