"""Feed-forward Nature-DQN networks (Mnih et al. 2015) on Atari: the torso (three convolutions, a
512-unit dense layer, ReLU) on the last frames stacked inside the network, with each agent's heads.

The Atari entry points' `--network=nature` (`vtrace_main`, `r2d2_main`) and `ppo_main`'s network:
much less compute than the original's default networks (`ImpalaDeep`, `DuelingLSTMDQNNet`), so
that Pong learns on a machine without a GPU. Imported by the learner only (TensorFlow).
"""

from typing import Sequence

import tensorflow as tf

from seed_rl.agents.vtrace import networks as vtrace_networks
from seed_rl.common import networks
from seed_rl.environments.atari import networks as atari_networks
from seed_rl.environments.atari.network_flags import INITIALIZATIONS


def initialize(initialization: str, torso_layers: Sequence[tf.keras.layers.Layer],
               policy_head: tf.keras.layers.Dense, value_head: tf.keras.layers.Dense) -> None:
  """Sets the kernel initializers of layers not built yet.

  'orthogonal': orthogonal kernels with gain sqrt(2) in the ReLU torso, 0.01 for the policy
  logits (a near-uniform first policy) and 1 for the value, as PPO's Atari agents start (the
  frames' state-dependent part then reaches the torso's output much larger than with Keras's
  default: docs/tuning.md, Why the kernels start orthogonal); 'glorot': Keras's default (Glorot
  uniform) everywhere.
  """
  if initialization not in INITIALIZATIONS:
    raise ValueError(f'initialization must be one of {INITIALIZATIONS}, got {initialization!r}')
  if initialization == 'glorot':
    return
  # A new initializer per layer: Keras fixes an unseeded initializer's seed when the initializer
  # is created, so one instance would give layers of the same shape the same kernel.
  for layer in torso_layers:
    layer.kernel_initializer = tf.keras.initializers.Orthogonal(gain=2 ** 0.5)
  policy_head.kernel_initializer = tf.keras.initializers.Orthogonal(gain=0.01)
  value_head.kernel_initializer = tf.keras.initializers.Orthogonal(gain=1.)


class NatureActorCritic(vtrace_networks.RecurrentActorCritic):
  """V-trace: the Nature-DQN torso, optional LSTMs, then the policy logits and baseline heads;
  actions sampled from `parametric_action_distribution`.

  On Atari the env gives one 84x84 frame. With the defaults the network sees it alone and has no
  memory (a network for throughput benchmarks, state `()`). `lstm_sizes` add LSTMs after the
  torso; `stack_size` (up to 4) stacks the last frames inside the network as the R2D2 network
  does, the memory Nature-DQN and its successors learn Atari with (`bench/learn_atari.py`). The
  state is then `(lstm_state, frame_stacking_state)`. `initialization` names the initial kernels
  (`initialize`).
  """

  def __init__(self, parametric_action_distribution, lstm_sizes=(), stack_size: int = 1,
               observation_shape=(84, 84, 1), initialization: str = 'orthogonal'):
    super().__init__(parametric_action_distribution.param_size, lstm_sizes,
                     name='NatureActorCritic')
    self._distribution = parametric_action_distribution
    self._stack_size = int(stack_size)
    self._observation_shape = atari_networks.check_frame_stacking(self._stack_size,
                                                                  observation_shape)
    self._convs = networks.track_layers(self, '_conv', atari_networks.nature_dqn_convs())
    self._flatten = tf.keras.layers.Flatten()
    self._fc = tf.keras.layers.Dense(512, activation='relu', name='fc')
    initialize(initialization, self._convs + [self._fc], self._policy_logits, self._baseline)

  def initial_state(self, batch_size):
    """The LSTMs' zero state, paired with the empty frame stack when frames are stacked."""
    lstm_state = self._initial_core_state(batch_size)
    if self._stack_size == 1:
      return lstm_state
    return lstm_state, atari_networks.initial_frame_stacking_state(
        self._stack_size, batch_size, self._observation_shape)

  def _torso(self, unused_prev_actions, env_outputs):
    x = tf.cast(env_outputs.observation, tf.float32) / 255.
    for conv in self._convs:
      x = conv(x)
    return self._fc(self._flatten(x))

  def _sample(self, policy_logits):
    return self._distribution(policy_logits).sample()

  def _unroll_stacked(self, prev_actions, env_outputs, state):
    lstm_state, frame_stacking_state = state
    done = tf.convert_to_tensor(env_outputs.done)
    stacked, frame_stacking_state = atari_networks.stack_frames(
        env_outputs.observation, frame_stacking_state, done, self._stack_size)
    outputs, lstm_state = networks.torso_core_head(self._torso, self._core, self._head)(
        prev_actions, env_outputs._replace(observation=stacked, done=done), lstm_state)
    return outputs, (lstm_state, frame_stacking_state)

  def call(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
    if self._stack_size == 1:
      return super().call(prev_actions, env_outputs, core_state, unroll, is_training)
    return networks.apply_step_or_unroll(self._unroll_stacked, prev_actions, env_outputs,
                                         core_state, unroll)


class NatureOnPolicyAgent(tf.Module):
  """The configurable on-policy learner's agent (PPO) on Atari: a `NatureActorCritic` without
  LSTM behind that learner's calling convention,
  `agent((prev_actions, env_outputs), core_state, unroll=False, is_training=False)`.

  The network scales the frames to [0, 1] itself, so the observation statistics that the learner
  updates for its MLP agent have nothing to do here.
  """

  def __init__(self, parametric_action_distribution, stack_size: int = 4,
               observation_shape=(84, 84, 1), initialization: str = 'orthogonal'):
    super().__init__(name='NatureOnPolicyAgent')
    self._network = NatureActorCritic(parametric_action_distribution, stack_size=stack_size,
                                      observation_shape=observation_shape,
                                      initialization=initialization)

  @property
  def variables(self):
    return self._network.variables

  @property
  def trainable_variables(self):
    return self._network.trainable_variables

  def initial_state(self, batch_size):
    return self._network.initial_state(batch_size)

  def update_observation_normalization_statistics(self, unused_observations) -> None:
    """Nothing to update (see the class docstring)."""

  def __call__(self, input_, core_state, unroll=False, is_training=False):
    prev_actions, env_outputs = input_
    return self._network(prev_actions, networks.as_env_output(env_outputs), core_state,
                         unroll=unroll, is_training=is_training)


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
