"""Each batch mode of PPO's training step shows the minibatches it should to `minimize`."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import ppo_training_step_utils as utils
from seed_rl.common.learner_runtime import Unroll
from seed_rl.common.structures import EnvOutput

B, T = 4, 3  # Unrolls of T + 1 steps.


def _unrolls(agent_state=()):
  """Unrolls whose every step is numbered `100 * unroll + step` (in the observation)."""
  steps = np.arange(B)[:, None] * 100 + np.arange(T + 1)[None, :]
  env_outputs = EnvOutput(reward=tf.zeros([B, T + 1]), done=tf.zeros([B, T + 1], tf.bool),
                          observation=tf.constant(steps, tf.float32)[..., None],
                          abandoned=tf.zeros([B, T + 1], tf.bool),
                          episode_step=tf.zeros([B, T + 1], tf.int32))
  return Unroll(agent_state, tf.zeros([B, T + 1], tf.int32), env_outputs,
                tf.constant(steps, tf.float32))


def _advantages_of(unrolls):
  """Targets and advantages `[T, B]` that name their step: 100 * unroll + step (+0.5)."""
  steps = tf.transpose(unrolls.agent_outputs)[:-1]
  return steps, steps + 0.5


class _Recorder:
  """A `minimize` and a `compute_advantages` that remember what they were given."""

  def __init__(self):
    self.minibatches, self.advantage_calls = [], 0

  def minimize(self, batch):
    self.minibatches.append(tf.nest.map_structure(lambda t: t.numpy(), batch))

  def compute_advantages(self, unrolls):
    self.advantage_calls += 1
    return _advantages_of(unrolls)


def _run(batch_mode, epochs=3, batches_per_step=2, agent_state=()):
  recorder = _Recorder()
  utils.ppo_training_step(epochs, recorder.compute_advantages, _unrolls(agent_state),
                          batch_mode, recorder.minimize, batches_per_step)
  return recorder


def _unroll_ids(minibatch):
  return tuple(int(i) for i in minibatch.agent_outputs[:, 0] // 100)


def test_repeat_shows_the_same_minibatches_of_whole_unrolls_every_epoch():
  recorder = _run('repeat')
  assert recorder.advantage_calls == 0 and len(recorder.minibatches) == 6
  ids = [_unroll_ids(m) for m in recorder.minibatches]
  assert ids == [(0, 1), (2, 3)] * 3
  assert recorder.minibatches[0].agent_outputs.shape == (2, T + 1)


def test_shuffle_shows_every_unroll_once_per_epoch_in_new_orders():
  tf.random.set_seed(1)
  recorder = _run('shuffle', epochs=6)
  epochs = [sum((_unroll_ids(m) for m in recorder.minibatches[2 * e:2 * e + 2]), ())
            for e in range(6)]
  assert all(sorted(epoch) == [0, 1, 2, 3] for epoch in epochs)
  assert len(set(epochs)) > 1


def test_split_computes_advantages_once_and_trains_on_single_transitions():
  tf.random.set_seed(2)
  recorder = _run('split')
  assert recorder.advantage_calls == 1 and len(recorder.minibatches) == 6
  for epoch in range(3):
    seen = np.concatenate([m.agent_outputs for m in recorder.minibatches[2 * epoch:][:2]])
    # Every step but each unroll's last (bootstrap) step, once per epoch.
    expected = [100 * b + t for b in range(B) for t in range(T)]
    assert sorted(seen.tolist()) == expected
  for minibatch in recorder.minibatches:
    assert minibatch.agent_outputs.shape == (B * T // 2,)
    # Each transition keeps its own target and advantage, observation and action.
    np.testing.assert_array_equal(minibatch.normalized_targets, minibatch.agent_outputs)
    np.testing.assert_array_equal(minibatch.normalized_advantages, minibatch.agent_outputs + .5)
    np.testing.assert_array_equal(minibatch.env_outputs.observation[:, 0],
                                  minibatch.agent_outputs)


def test_split_with_advantage_recomputation_recomputes_every_epoch():
  assert _run('split_with_advantage_recomputation').advantage_calls == 3


@pytest.mark.parametrize('batch_mode', ['split', 'split_with_advantage_recomputation'])
def test_split_modes_refuse_recurrent_agents(batch_mode):
  with pytest.raises(ValueError, match='recurrent agent'):
    _run(batch_mode, agent_state=tf.zeros([B, 2]))


def test_recurrent_state_travels_with_its_unroll_in_shuffle_mode():
  tf.random.set_seed(3)
  state = tf.constant(np.arange(B, dtype=np.float32)[:, None])
  recorder = _run('shuffle', agent_state=state)
  for minibatch in recorder.minibatches:
    np.testing.assert_array_equal(minibatch.agent_state[:, 0], _unroll_ids(minibatch))


def test_minibatches_must_divide_the_batch():
  with pytest.raises(ValueError, match='do not split into 3 minibatches'):
    _run('shuffle', batches_per_step=3)


def test_targets_must_match_the_unrolls():
  unrolls = _unrolls()
  targets, advantages = _advantages_of(unrolls)
  with pytest.raises(ValueError, match='Timesteps mismatch'):
    utils.split_into_transitions(unrolls, targets[1:], advantages[1:])
  with pytest.raises(ValueError, match='Batch size mismatch'):
    utils.split_into_transitions(unrolls, targets[:, 1:], advantages[:, 1:])
