"""A tiny feed-forward actor-critic and time-major unrolls for it, to test the on-policy loss
and its training step, and numpy log-probabilities of categorical policies to check them."""

import collections

import numpy as np
import tensorflow as tf

from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput

# Steps, environments, observation size and actions of `unroll` by default.
T, B, OBS, A = 4, 3, 5, 3
AgentOutput = collections.namedtuple('AgentOutput', 'action policy_logits baseline')
DIST = parametric_distribution.categorical_distribution(A, tf.int32)


class TinyAgent(tf.keras.Model):
  """Feed-forward actor-critic: a hidden layer, a policy head and a value head."""

  def __init__(self, seed=0):
    super().__init__(name='tiny_agent')
    init = lambda k: tf.keras.initializers.GlorotUniform(seed=seed + k)
    self._hidden = tf.keras.layers.Dense(8, activation='tanh', kernel_initializer=init(0))
    self._policy = tf.keras.layers.Dense(A, kernel_initializer=init(1))
    self._value = tf.keras.layers.Dense(1, kernel_initializer=init(2),
                                        bias_initializer='ones')

  def call(self, inputs, core_state, unroll=False, is_training=False):
    del unroll, is_training  # Feed-forward: every step alike; the state passes through.
    _, env_outputs = inputs
    hidden = self._hidden(env_outputs.observation)
    logits = self._policy(hidden)
    baseline = tf.squeeze(self._value(hidden), -1)
    return AgentOutput(tf.argmax(logits, -1, output_type=tf.int32), logits, baseline), core_state


def unroll(rewards=None, done=None, abandoned=None, seed=0, steps=T, envs=B):
  """`(agent_state, prev_actions, env_outputs, agent_outputs)` of `steps + 1` time-major steps
  of `envs` environments."""
  rng = np.random.RandomState(seed)
  shape = (steps + 1, envs)
  rewards = np.zeros(shape, np.float32) if rewards is None else rewards
  done = np.zeros(shape, bool) if done is None else done
  abandoned = np.zeros(shape, bool) if abandoned is None else abandoned
  env_outputs = EnvOutput(tf.constant(rewards, tf.float32), tf.constant(done),
                          tf.constant(rng.randn(steps + 1, envs, OBS), tf.float32),
                          tf.constant(abandoned), tf.zeros(shape, tf.int32))
  actions = rng.randint(A, size=shape).astype(np.int32)
  prev_actions = tf.constant(np.concatenate([np.zeros([1, envs], np.int32), actions[:-1]]))
  agent_outputs = AgentOutput(tf.constant(actions),
                              tf.constant(rng.randn(steps + 1, envs, A), tf.float32),
                              tf.constant(rng.randn(steps + 1, envs), tf.float32))
  return (), prev_actions, env_outputs, agent_outputs


def log_softmax(logits):
  shifted = logits - logits.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def log_prob(logits, actions):
  """log pi(a) of a categorical policy of `logits` `[..., A]` for `actions` `[...]`."""
  return np.take_along_axis(log_softmax(logits), actions[..., None], -1)[..., 0]
