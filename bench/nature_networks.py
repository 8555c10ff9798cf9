"""Feed-forward Nature-DQN networks (Mnih et al. 2015) for the Atari benchmarks: the torso
(three convolutions, a 512-unit dense layer, ReLU) without LSTM, with each agent's heads.

A convolutional network without recurrence, beside the tiny MLP and the agents' default networks,
so that a benchmark can tell how throughput depends on network compute. Imported by the learner
only (TensorFlow).
"""

import tensorflow as tf

from seed_rl.agents.vtrace import networks as vtrace_networks
from seed_rl.common import networks
from seed_rl.environments.atari import networks as atari_networks


class NatureActorCritic(vtrace_networks.RecurrentActorCritic):
  """V-trace: the Nature-DQN torso on the observation as the env gives it, then the policy
  logits and baseline heads; actions sampled from `parametric_action_distribution`.

  On Atari the env gives one 84x84 frame and there is no frame stack: without `lstm_sizes` the
  policy has no memory (a network for throughput benchmarks, state `()`); with them, LSTMs after
  the torso give it one (`bench/learn_atari.py`).
  """

  def __init__(self, parametric_action_distribution, lstm_sizes=()):
    super().__init__(parametric_action_distribution.param_size, lstm_sizes,
                     name='NatureActorCritic')
    self._distribution = parametric_action_distribution
    self._convs = networks.track_layers(self, '_conv', atari_networks.nature_dqn_convs())
    self._flatten = tf.keras.layers.Flatten()
    self._fc = tf.keras.layers.Dense(512, activation='relu', name='fc')

  def _torso(self, unused_prev_actions, env_outputs):
    x = tf.cast(env_outputs.observation, tf.float32) / 255.
    for conv in self._convs:
      x = conv(x)
    return self._fc(self._flatten(x))

  def _sample(self, policy_logits):
    return self._distribution(policy_logits).sample()


class NatureDQNNet(atari_networks.DuelingLSTMDQNNet):
  """R2D2: the Atari R2D2 network without its LSTM (frame stack, Nature-DQN torso with the reward
  and one-hot previous action, dueling head).

  The R2D2 learner handles any state nest, empty ones included; this one is
  `AgentState(core_state=(), frame_stacking_state)`, the frame stack being all the memory left
  (and `()` too with `stack_size=1`).
  """

  def build(self, unused_input_shape):
    """Nothing to build ahead: the layers build on the first call. (Keras's default `build` would
    warn about the parent's LSTM cell, which this network never calls and so stays unbuilt.)"""
    self.built = True

  def initial_state(self, batch_size) -> atari_networks.AgentState:
    """`DuelingLSTMDQNNet`'s state without the LSTM's part."""
    return super().initial_state(batch_size)._replace(core_state=())

  def _unroll_lstm(self, torso_outputs, done, core_state):
    return torso_outputs, core_state
