"""seed_rl.common.training.minibatches: the minibatches each batch mode shows `minimize`, and
the library signature `ppo_training_step` training a loss with its optimizer and logger."""

import gc
import weakref

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import advantages
from seed_rl.agents.policy_gradient.modules import generalized_onpolicy_loss as gol
from seed_rl.agents.policy_gradient.modules import policy_losses
from seed_rl.common.learner_runtime import progress_logger
from seed_rl.common.learner_runtime import Unroll
from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import minibatches
from tests.agents.policy_gradient.modules import onpolicy_helpers as helpers

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
  minibatches.train_epochs(epochs, _unrolls(agent_state), batch_mode, recorder.minimize,
                     batches_per_step, compute_advantages=recorder.compute_advantages)
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
    minibatches.split_into_transitions(unrolls, targets[1:], advantages[1:])
  with pytest.raises(ValueError, match='Batch size mismatch'):
    minibatches.split_into_transitions(unrolls, targets[:, 1:], advantages[:, 1:])


def test_a_split_mode_without_compute_advantages_or_an_unknown_mode_is_refused():
  with pytest.raises(ValueError, match='pass compute_advantages'):
    minibatches.train_epochs(1, _unrolls(), 'split', lambda batch: None, 2)
  with pytest.raises(ValueError, match="Unknown batch_mode='shuffled'"):
    minibatches.train_epochs(1, _unrolls(), 'shuffled', lambda batch: None, 2)


# The library signature, on time-major unrolls of the tiny agent.


def _loss_fn(agent):
  return gol.GeneralizedOnPolicyLoss(agent, None, helpers.DIST, advantages.GAE(0.9),
                                     policy_losses.ppo(0.2), 0.9)


def _time_major_unrolls(envs=helpers.B, agent_state=(), seed=0):
  rewards = np.random.RandomState(seed).randn(helpers.T + 1, envs)
  return Unroll(agent_state, *helpers.unroll(rewards=rewards, seed=seed, envs=envs)[1:])


def test_compute_advantages_and_split_gives_transitions_with_their_advantages():
  loss_fn = _loss_fn(helpers.TinyAgent())
  args = _time_major_unrolls()
  split = minibatches.compute_advantages_and_split(loss_fn, args)
  agent_state, prev_actions, env_outputs, agent_outputs, targets, advantages_ = split
  n = helpers.T * helpers.B
  assert agent_state == ()
  assert agent_outputs.policy_logits.shape == (1, n, helpers.A)
  assert env_outputs.observation.shape == (1, n, helpers.OBS)
  # Transition t * B + b is step t of environment b, with its own target and advantage.
  expected_targets, expected_advantages = loss_fn.compute_advantages(*args)
  np.testing.assert_array_equal(prev_actions[0], np.reshape(args.prev_actions[:-1], [-1]))
  np.testing.assert_array_equal(agent_outputs.action[0],
                                np.reshape(args.agent_outputs.action[:-1], [-1]))
  np.testing.assert_allclose(targets[0], np.reshape(expected_targets, [-1]), rtol=1e-6)
  np.testing.assert_allclose(advantages_[0], np.reshape(expected_advantages, [-1]), rtol=1e-6)
  # The loss of the transitions is that of the unrolls.
  np.testing.assert_allclose(loss_fn(*split), loss_fn(*args), rtol=1e-5)
  with pytest.raises(ValueError, match='recurrent agent'):
    minibatches.compute_advantages_and_split(loss_fn, args._replace(agent_state=tf.zeros([3, 2])))


def _variables(loss_fn):
  return [v.numpy() for v in loss_fn.trainable_variables]


def test_ppo_training_step_makes_one_clipped_optimizer_step_of_the_loss():
  agent = helpers.TinyAgent()
  loss_fn = _loss_fn(agent)
  args = _time_major_unrolls()
  with tf.GradientTape() as tape:
    expected_loss = loss_fn(*args)
  variables = loss_fn.trainable_variables
  assert len(variables) == len(agent.trainable_variables) == 6  # The agent's weights.
  gradients = tape.gradient(expected_loss, variables)
  norm = float(tf.linalg.global_norm(gradients))
  before = _variables(loss_fn)
  learning_rate, clip_norm = 0.5, norm / 4.

  loss, logs = minibatches.ppo_training_step(
      epochs_per_step=1, loss_fn=loss_fn, args=args, batch_mode='repeat',
      training_strategy=tf.distribute.get_strategy(), virtual_batch_size=helpers.B,
      unroll_length=helpers.T, batches_per_step=1, clip_norm=clip_norm,
      optimizer=tf.keras.optimizers.SGD(learning_rate), logger=progress_logger.ProgressLogger())

  np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
  for old, new, gradient in zip(before, _variables(loss_fn), gradients):
    np.testing.assert_allclose(new, old - learning_rate * gradient.numpy() / 4., rtol=1e-4,
                               atol=1e-6)
  names = [name for name, _ in logs]
  assert names[-2:] == ['grad/norm', 'grad/trainable_variables']
  assert 'GeneralizedOnPolicyLoss/total_loss' in names
  np.testing.assert_allclose(dict(logs)['grad/norm'], norm, rtol=1e-5)
  np.testing.assert_allclose(dict(logs)['grad/trainable_variables'],
                             np.sqrt(sum(np.sum(np.square(v)) for v in before)), rtol=1e-5)


@pytest.mark.parametrize('batch_mode,agent_state', [
    ('repeat', ()), ('shuffle', tf.zeros([4, 2])), ('split', ()),
    ('split_with_advantage_recomputation', ())])
def test_ppo_training_step_trains_every_minibatch_of_every_epoch(batch_mode, agent_state):
  args = _time_major_unrolls(envs=4, agent_state=agent_state)
  untrained = helpers.TinyAgent()
  untrained(args[1:3], agent_state, unroll=True)  # Builds the weights the agent starts with.
  before = [v.numpy() for v in untrained.trainable_variables]
  loss_fn = _loss_fn(helpers.TinyAgent())  # Built by its first training step.
  optimizer = tf.keras.optimizers.SGD(0.1)
  loss, logs = minibatches.ppo_training_step(3, loss_fn, args, batch_mode, tf.distribute.get_strategy(),
                                       4, helpers.T, 2, None, optimizer,
                                       progress_logger.ProgressLogger())
  assert int(optimizer.iterations) == 3 * 2
  assert loss.shape == [] and np.isfinite(loss)
  assert all(np.isfinite(value).all() for _, value in logs)
  assert len(before) == 6
  assert all(np.any(old != new) for old, new in zip(before, _variables(loss_fn)))


class _TracedLoss(gol.GeneralizedOnPolicyLoss):
  """The loss, counting the calls of `__call__`: in a tf.function, its traces."""

  calls = 0

  def __call__(self, *args, **kwargs):
    self.calls += 1
    return super().__call__(*args, **kwargs)


def test_ppo_training_step_traces_its_optimizer_step_once_per_loss_optimizer_and_clip_norm():
  """An eager caller's training steps reuse one traced optimizer step."""
  loss_fn = _TracedLoss(helpers.TinyAgent(), None, helpers.DIST, advantages.GAE(0.9),
                        policy_losses.ppo(0.2), 0.9)
  optimizer = tf.keras.optimizers.SGD(0.1)
  args = _time_major_unrolls()

  def train(clip_norm=None, optimizer_=optimizer):
    minibatches.ppo_training_step(1, loss_fn, args, 'repeat', tf.distribute.get_strategy(), helpers.B,
                            helpers.T, 1, clip_norm, optimizer_, progress_logger.ProgressLogger())
    return loss_fn.calls

  first = train()
  assert first >= 1
  assert train() == train() == first  # Traced once: later steps only run the graph.
  assert train(clip_norm=1.) > first  # Another clip norm is another step.
  traced = loss_fn.calls
  assert train(optimizer_=tf.keras.optimizers.SGD(0.1)) > traced  # So is another optimizer.


def test_the_cached_optimizer_step_keeps_neither_loss_nor_optimizer_alive():
  loss_fn, optimizer = _loss_fn(helpers.TinyAgent()), tf.keras.optimizers.SGD(0.1)
  minibatches.ppo_training_step(1, loss_fn, _time_major_unrolls(), 'repeat',
                          tf.distribute.get_strategy(), helpers.B, helpers.T, 1, None, optimizer,
                          progress_logger.ProgressLogger())
  references = [weakref.ref(loss_fn), weakref.ref(optimizer)]
  del loss_fn, optimizer
  gc.collect()
  assert [reference() for reference in references] == [None, None]


def test_ppo_training_step_checks_the_unrolls_against_its_sizes():
  loss_fn = _loss_fn(helpers.TinyAgent())
  args = _time_major_unrolls()
  train = lambda **sizes: minibatches.ppo_training_step(
      1, loss_fn, args, 'repeat', tf.distribute.get_strategy(), batches_per_step=1,
      clip_norm=None, optimizer=tf.keras.optimizers.SGD(0.1),
      logger=progress_logger.ProgressLogger(), **sizes)
  with pytest.raises(ValueError, match='Timesteps mismatch: unrolls of 5 steps for '
                     'unroll_length=5'):
    train(virtual_batch_size=helpers.B, unroll_length=helpers.T + 1)
  with pytest.raises(ValueError, match='Batch size mismatch: 1 replicas x 3 unrolls for '
                     'virtual_batch_size=6'):
    train(virtual_batch_size=2 * helpers.B, unroll_length=helpers.T)
  with pytest.raises(ValueError, match=r'agent state must have the leading dimension \[batch\]'):
    minibatches.ppo_training_step(1, loss_fn, args._replace(agent_state=tf.zeros([2, 1])), 'repeat',
                            tf.distribute.get_strategy(), helpers.B, helpers.T, 1, None,
                            tf.keras.optimizers.SGD(0.1), progress_logger.ProgressLogger())
