"""Actor-critic networks of the SAC learner: a policy, a state value V and `n_critics` Q's.

Every network has the agents' calling convention: `get_action_params`, `get_V` and
`get_Q(..., action)` take `(prev_actions, env_outputs, core_state, unroll=None,
is_training=False)` with time-major `[T, B, ...]` inputs, as the original SEED RL's do, or
`[B, ...]` inputs for one step; `unroll` says which, and when left out the rank of
`env_outputs.done` does (see `networks.is_time_major`). `__call__` samples an action:
`(action, new_core_state)`, from one step unless `unroll=True`. Observations may be nests (a
GoalEnv's dict): their leaves are flattened and concatenated.
"""

from typing import Any, Sequence

import tensorflow as tf

from seed_rl.common import networks


class MLP(tf.keras.layers.Layer):
  """Dense layers applied in turn, on inputs of any rank (Keras' Sequential fixes the rank)."""

  def __init__(self, layers: Sequence[tf.keras.layers.Layer]):
    super().__init__()
    self._dense_layers = networks.track_layers(self, '_dense', layers)

  def call(self, inputs):
    for layer in self._dense_layers:
      inputs = layer(inputs)
    return inputs


def create_mlp(hidden_sizes: Sequence[int], hidden_activation='relu',
               last_layer_activation=None) -> tf.keras.layers.Layer:
  """Dense layers of `hidden_sizes` units (the last size is the output size)."""
  sizes = list(hidden_sizes)
  layers = [tf.keras.layers.Dense(size, activation=hidden_activation) for size in sizes[:-1]]
  layers.append(tf.keras.layers.Dense(sizes[-1], activation=last_layer_activation))
  return MLP(layers)


def flat_observation(observation, batch_ndims: int):
  """The float32 concatenation of every observation leaf, flattened behind the batch dims."""
  leaves = [tf.cast(leaf, tf.float32) for leaf in tf.nest.flatten(observation)]
  return tf.concat([tf.reshape(leaf, tf.concat([tf.shape(leaf)[:batch_ndims], [-1]], 0))
                    for leaf in leaves], axis=-1)


def action_features(action, batch_ndims: int):
  """Actions as float32 features with a trailing dimension (scalar actions get one)."""
  action = tf.cast(action, tf.float32)
  return action[..., tf.newaxis] if action.shape.rank == batch_ndims else action


class ActorCriticMLP(tf.keras.Model):
  """Feed-forward SAC networks: a policy MLP, `n_critics` Q MLPs on `[observation, action]` and
  a V MLP, each with `mlp_sizes` hidden units. Stateless (`initial_state` is `()`)."""

  def __init__(self, parametric_action_distribution, n_critics: int, mlp_sizes: Sequence[int],
               hidden_activation='relu', last_layer_activation=None):
    super().__init__(name='ActorCriticMLP')
    self._parametric_action_distribution = parametric_action_distribution
    mlp = lambda size: create_mlp(list(mlp_sizes) + [size], hidden_activation,
                                  last_layer_activation)
    self._actor = mlp(parametric_action_distribution.param_size)
    self._qs = networks.track_layers(self, '_q', [mlp(1) for _ in range(n_critics)])
    self._v = mlp(1)

  def initial_state(self, unused_batch_size):
    return ()

  def _observation(self, env_outputs, unroll):
    return flat_observation(networks.as_env_output(env_outputs).observation,
                            2 if networks.is_time_major(env_outputs, unroll) else 1)

  def get_action_params(self, prev_actions, env_outputs, core_state, unroll=None,
                        is_training=False):
    del prev_actions, core_state, is_training
    return self._actor(self._observation(env_outputs, unroll))

  def get_V(self, prev_actions, env_outputs, core_state, unroll=None, is_training=False):  # pylint: disable=invalid-name
    del prev_actions, core_state, is_training
    return tf.squeeze(self._v(self._observation(env_outputs, unroll)), axis=-1)

  def get_Q(self, prev_actions, env_outputs, core_state, action, unroll=None,  # pylint: disable=invalid-name
            is_training=False):
    del prev_actions, core_state, is_training
    batch_ndims = 2 if networks.is_time_major(env_outputs, unroll) else 1
    inputs = tf.concat([self._observation(env_outputs, unroll),
                        action_features(action, batch_ndims)], axis=-1)
    return tf.concat([q(inputs) for q in self._qs], axis=-1)

  def call(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
    params = self.get_action_params(prev_actions, env_outputs, core_state, unroll, is_training)
    return self._parametric_action_distribution(params).sample(), core_state


class LSTMwithFeedForwardBranch(tf.keras.Model):
  """A recurrent branch (pre-MLP, then a stack of LSTMs restarted where an episode starts) and a
  feed-forward branch (MLP) side by side, concatenated into a post-MLP.

  Called on time-major `[T, B, ...]` inputs:
  `(recurrent_inputs, feed_forward_inputs, done, core_state) -> (outputs, new_core_state)`.
  """

  def __init__(self, lstm_sizes: Sequence[int], pre_mlp_sizes: Sequence[int],
               post_mlp_sizes: Sequence[int], ff_mlp_sizes: Sequence[int],
               mlp_activation='relu', last_layer_activation=None):
    super().__init__(name='LSTMwithFeedForwardBranch')
    hidden = lambda sizes: (create_mlp(sizes, mlp_activation, mlp_activation) if sizes
                            else tf.keras.layers.Identity())
    self._pre_mlp = hidden(pre_mlp_sizes)
    self._cells = networks.track_layers(
        self, '_cell', [tf.keras.layers.LSTMCell(size) for size in lstm_sizes])
    self._ff_mlp = hidden(ff_mlp_sizes)
    self._post_mlp = create_mlp(post_mlp_sizes, mlp_activation, last_layer_activation)

  def initial_state(self, batch_size):
    """Zero LSTM state `((h, c), ...)`, one pair per cell."""
    return tuple((tf.zeros([batch_size, cell.units]), tf.zeros([batch_size, cell.units]))
                 for cell in self._cells)

  def call(self, recurrent_inputs, feed_forward_inputs, done, core_state):
    core_outputs, core_state = networks.unroll_recurrent(
        networks.lstm_stack_step(self._cells), self._pre_mlp(recurrent_inputs), done,
        core_state, self.initial_state(tf.shape(done)[1]))
    outputs = self._post_mlp(tf.concat([core_outputs, self._ff_mlp(feed_forward_inputs)], -1))
    return outputs, core_state


class ActorCriticLSTM(tf.keras.Model):
  """Recurrent SAC networks: separate `LSTMwithFeedForwardBranch` networks for the policy, V and
  each of the `n_critics` Q's.

  The recurrent branch sees the observation (without a GoalEnv's `desired_goal`, which does not
  belong to the history) and the previous action; the feed-forward branch sees the whole
  observation, and the current action for Q. The state is
  `(policy_state, v_state, (q_state, ...))`.
  """

  def __init__(self, parametric_action_distribution, n_critics: int,
               lstm_sizes: Sequence[int], pre_mlp_sizes: Sequence[int],
               post_mlp_sizes: Sequence[int], ff_mlp_sizes: Sequence[int]):
    super().__init__(name='ActorCriticLSTM')
    self._parametric_action_distribution = parametric_action_distribution
    network = lambda size: LSTMwithFeedForwardBranch(
        lstm_sizes, pre_mlp_sizes, list(post_mlp_sizes) + [size], ff_mlp_sizes)
    self._actor = network(parametric_action_distribution.param_size)
    self._v = network(1)
    self._qs = networks.track_layers(self, '_q', [network(1) for _ in range(n_critics)])

  def initial_state(self, batch_size):
    return (self._actor.initial_state(batch_size), self._v.initial_state(batch_size),
            tuple(q.initial_state(batch_size) for q in self._qs))

  def _run(self, network, prev_actions, env_outputs, core_state, unroll, action=None):
    """`network` over time on the branches' inputs; `[B, ...]` in and out without `unroll`."""
    env_outputs = networks.as_env_output(env_outputs)
    if not unroll:
      prev_actions, env_outputs = networks.add_time_dimension((prev_actions, env_outputs))
      action = None if action is None else networks.add_time_dimension(action)
    observation = env_outputs.observation
    history = observation
    if isinstance(observation, dict) and 'desired_goal' in observation:
      history = {k: v for k, v in observation.items() if k != 'desired_goal'}
    recurrent_inputs = tf.concat([flat_observation(history, 2),
                                  action_features(prev_actions, 2)], axis=-1)
    feed_forward_inputs = flat_observation(observation, 2)
    if action is not None:
      feed_forward_inputs = tf.concat([feed_forward_inputs, action_features(action, 2)], -1)
    outputs, core_state = network(recurrent_inputs, feed_forward_inputs, env_outputs.done,
                                  core_state)
    return (outputs if unroll else outputs[0]), core_state

  def get_action_params(self, prev_actions, env_outputs, core_state, unroll=None,
                        is_training=False):
    del is_training
    unroll = networks.is_time_major(env_outputs, unroll)
    return self._run(self._actor, prev_actions, env_outputs, core_state[0], unroll)[0]

  def get_V(self, prev_actions, env_outputs, core_state, unroll=None, is_training=False):  # pylint: disable=invalid-name
    del is_training
    unroll = networks.is_time_major(env_outputs, unroll)
    values, _ = self._run(self._v, prev_actions, env_outputs, core_state[1], unroll)
    return tf.squeeze(values, axis=-1)

  def get_Q(self, prev_actions, env_outputs, core_state, action, unroll=None,  # pylint: disable=invalid-name
            is_training=False):
    del is_training
    unroll = networks.is_time_major(env_outputs, unroll)
    return tf.concat([self._run(q, prev_actions, env_outputs, state, unroll, action)[0]
                      for q, state in zip(self._qs, core_state[2])], axis=-1)

  def call(self, prev_actions, env_outputs, core_state, unroll=False, is_training=False):
    """Samples an action and advances every network's state by the step(s)."""
    del is_training
    params, actor_state = self._run(self._actor, prev_actions, env_outputs, core_state[0],
                                    unroll)
    action = self._parametric_action_distribution(params).sample()
    _, v_state = self._run(self._v, prev_actions, env_outputs, core_state[1], unroll)
    q_states = tuple(self._run(q, prev_actions, env_outputs, state, unroll, action)[1]
                     for q, state in zip(self._qs, core_state[2]))
    return action, (actor_state, v_state, q_states)
