"""The GFootball V-trace network on packed SMM observations (real TF, small batches)."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput
from seed_rl.environments.football import networks, observation

NUM_ACTIONS = 19  # gfootball's default action set.


def _agent():
  dist = parametric_distribution.categorical_distribution(NUM_ACTIONS, tf.int64)
  return networks.GFootball(dist)


def _env_outputs(shape, seed=0):
  """Packed stacked-SMM env outputs with `shape` = [B] or [T, B]."""
  rng = np.random.default_rng(seed)
  planes = (rng.integers(0, 2, size=tuple(shape) + (72, 96, 16)) * 255).astype(np.uint8)
  return EnvOutput(reward=tf.zeros(shape), done=tf.zeros(shape, tf.bool),
                   observation=tf.constant(observation.packbits(planes)),
                   abandoned=tf.zeros(shape, tf.bool),
                   episode_step=tf.zeros(shape, tf.int32))


@pytest.mark.timeout(120)
def test_inference_and_unroll_shapes_and_no_state():
  agent = _agent()
  assert agent.initial_state(3) == ()
  outputs, state = agent(tf.zeros([3], tf.int64), _env_outputs([3]), ())
  assert state == ()
  assert outputs.action.shape == (3,) and outputs.action.dtype == tf.int64
  assert outputs.policy_logits.shape == (3, NUM_ACTIONS)
  assert outputs.baseline.shape == (3,)
  assert np.all((outputs.action.numpy() >= 0) & (outputs.action.numpy() < NUM_ACTIONS))

  outputs, state = agent(tf.zeros([2, 3], tf.int64), _env_outputs([2, 3]), (), unroll=True)
  assert state == ()
  assert outputs.policy_logits.shape == (2, 3, NUM_ACTIONS)
  assert outputs.baseline.shape == (2, 3)


@pytest.mark.timeout(120)
def test_four_resnet_stacks_dense_and_heads_with_lecun_normal_kernels():
  agent = _agent()
  agent(tf.zeros([1], tf.int64), _env_outputs([1]), ())
  # 4 stacks x (conv + 2 residual blocks x 2 convs) = 20 convs, the 256-unit dense layer and
  # the two heads: 23 kernels and 23 biases. No LSTM.
  assert len(agent.trainable_variables) == 46
  kernels = [v for v in agent.trainable_variables if v.shape.rank >= 2]
  assert len(kernels) == 23
  assert [k.shape[-1] for k in kernels if k.shape.rank == 4][::5] == [16, 32, 32, 32]
  # 72x96 halved by 4 stride-2 poolings is 5x6, times 32 channels.
  assert agent._fc.kernel.shape == (5 * 6 * 32, 256)  # pylint: disable=protected-access
  # pylint: disable-next=protected-access
  for layer in (agent._fc, agent._policy_logits, agent._baseline):
    assert isinstance(layer.kernel_initializer, tf.keras.initializers.LecunNormal)


@pytest.mark.timeout(120)
def test_checkpoint_round_trip(tmp_path):
  env_outputs = _env_outputs([2], seed=3)
  prev_actions = tf.zeros([2], tf.int64)
  agent = _agent()
  expected, _ = agent(prev_actions, env_outputs, ())
  path = tf.train.Checkpoint(agent=agent).write(str(tmp_path / 'ckpt'))

  restored = _agent()
  restored(prev_actions, env_outputs, ())  # Build, with other random weights.
  tf.train.Checkpoint(agent=restored).read(path).assert_consumed()
  actual, _ = restored(prev_actions, env_outputs, ())
  np.testing.assert_allclose(actual.policy_logits, expected.policy_logits, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(actual.baseline, expected.baseline, rtol=1e-5, atol=1e-6)
