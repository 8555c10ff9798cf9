"""The configurable actor-critic agent of the on-policy (PPO) learner.

`ContinuousControlAgent` is the network family studied in "What matters in
on-policy reinforcement learning" (Andrychowicz et al. 2020): every choice the
paper varies (shared or separate policy and value MLPs, their depth and width,
activation, initializers and last-layer scaling, layer normalization,
residual connections, observation normalization and clipping, a
state-independent std) is a constructor argument, so gin files can select it.

Pipeline, per step:
  observation -> normalize with the running statistics of
  `observation_normalizer` -> clip to +-`input_clipping` (optional) -> the
  normalizer's trainable correction (optional, `correct_observations`) ->
  the shared MLP (with `shared`) -> one LSTM stack (optional, reset where a
  new episode starts) -> the separate policy and value MLPs (without
  `shared`) -> policy head (`param_size` distribution parameters) and value
  head (the baseline). Without `shared` the LSTM stack therefore reads the
  observations themselves, and its state is one `(h, c)` pair per LSTM layer
  either way, the state of one Keras `StackedRNNCells`.
Only the observation is an input; previous actions and rewards are not used.

Calling convention (that of `GeneralizedOnPolicyLoss` and the learner):
`agent((prev_actions, env_outputs), core_state, unroll=False,
is_training=False) -> (AgentOutput, new_core_state)`. Without `unroll` the
inputs are `[B, ...]` (one inference step); with `unroll` they are time-major
`[T, B, ...]` and so are the outputs. `env_outputs` is an `EnvOutput` (or a
5-tuple in its order); observations are `[..., size]` vectors (trailing
dimensions beyond the batch are flattened for the MLPs, while the statistics
are per entry of the last axis).

Observation statistics change only through
`update_observation_normalization_statistics`, which the learner calls once
per training step. Their variables are created by the first call of the agent,
which therefore must not be a training unroll (`unroll=True` with
`is_training=True`, the call whose gradients update the agent): one step, in
training or not, creates them (the learner calls every agent once on zero
inputs inside the strategy scope).

The agent is a `tf.Module` holding Keras layers: Keras 3 models do not collect
the `tf.Variable`s of the normalizer, and `tf.Module` does not collect Keras
weights, so `variables` and `trainable_variables` list both explicitly, in an
order that is the same for every agent built with the same arguments (the
learner copies the training agent into the inference agent variable by
variable). `tf.train.Checkpoint` tracks both kinds through the attributes.
"""

import collections
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import gin
import numpy as np
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.common import networks as common_networks
from seed_rl.common.training import running_statistics

AgentOutput = collections.namedtuple('AgentOutput',
                                     'action policy_logits baseline')

# A Keras initializer, its name ('glorot_uniform') or config dict, or a
# function `(shape, dtype=None) -> tensor`.
Initializer = Union[str, dict, tf.keras.initializers.Initializer, Callable]


class _ScaledInitializer(tf.keras.initializers.Initializer):
  """`scale` times the values of another initializer.

  Implements the `*_scaling` arguments: the head's initial kernel is drawn
  from its initializer and multiplied, whatever that initializer is.
  """

  def __init__(self, initializer: Callable, scale: float):
    self._initializer = initializer
    self._scale = float(scale)

  def __call__(self, shape, dtype=None, **kwargs):
    return self._initializer(shape, dtype=dtype) * self._scale

  def get_config(self) -> dict:
    return {'initializer': self._initializer, 'scale': self._scale}


def _fresh_initializer(initializer: Initializer,
                       scale: Optional[float] = None) -> Callable:
  """A new instance of `initializer`, optionally scaled, for one layer.

  Keras 3 fixes the seed of an unseeded initializer when it is constructed,
  so one instance (as gin passes it) would give every layer of the same
  shape the same initial kernel. Keras initializers are therefore rebuilt
  from their config, which draws a new seed unless the config has one.
  """
  if isinstance(initializer, (str, dict)):
    initializer = tf.keras.initializers.get(initializer)
  elif isinstance(initializer, tf.keras.initializers.Initializer):
    initializer = type(initializer).from_config(initializer.get_config())
  elif not callable(initializer):
    raise ValueError('An initializer must be a name, a Keras initializer or '
                     f'a function, got {initializer!r}')
  if scale is not None:
    initializer = _ScaledInitializer(initializer, scale)
  return initializer


@gin.configurable
class ContinuousControlAgent(tf.Module):
  """MLP (and LSTM) actor-critic, configurable; see the module docstring."""

  def __init__(
      self,
      parametric_action_distribution: Any,
      observation_normalizer: Optional[
          input_normalization.InputNormalization] = None,
      num_layers_policy: int = 3,
      num_layers_value: Optional[int] = 3,
      num_layers_rnn: int = 0,
      num_units_policy: int = 256,
      num_units_value: Optional[int] = 256,
      num_units_rnn: int = 256,
      layer_normalizer: Optional[Callable[[], Callable]] = None,
      shared: bool = False,
      residual_connections: bool = False,
      activation: Optional[Union[str, Callable]] = None,
      kernel_init: Initializer = 'glorot_uniform',
      last_kernel_init_value: Optional[Initializer] = None,
      last_kernel_init_value_scaling: Optional[float] = None,
      last_kernel_init_policy: Optional[Initializer] = None,
      last_kernel_init_policy_scaling: Optional[float] = None,
      correct_observations: bool = False,
      std_independent_of_input: bool = False,
      input_clipping: Optional[float] = None):
    """Creates the layers; variables are created by the first call.

    Args:
      parametric_action_distribution: A `ParametricDistribution`; the policy
        head outputs its `param_size` parameters and actions are its samples.
      observation_normalizer: An uninitialized `InputNormalization`. None
        normalizes with the fixed mean 0 and std 1 (the identity).
      num_layers_policy: Hidden layers of the policy MLP (of the shared MLP
        when `shared`).
      num_layers_value: Hidden layers of the value MLP; None or 0 means
        `num_layers_policy`. With `shared` it must equal `num_layers_policy`.
      num_layers_rnn: LSTM layers of the stack between the shared MLP (or
        the observations) and the heads' MLPs (0: feed-forward).
      num_units_policy: Width of the policy (or shared) MLP.
      num_units_value: Width of the value MLP; None or 0 means
        `num_units_policy`. With `shared` it must equal `num_units_policy`.
      num_units_rnn: Units of every LSTM layer.
      layer_normalizer: None, or a class or zero-argument function returning a
        normalization layer (e.g. `tf.keras.layers.LayerNormalization`); each
        hidden layer and each head gets its own one, applied to its input
        (with `shared`, both heads read their shared input through one).
      shared: Whether policy and value heads read one MLP, before the LSTM
        stack, instead of one MLP each, after it.
      residual_connections: Whether each hidden layer but the first adds its
        input to its output.
      activation: Activation of the hidden layers (a function or Keras name);
        None means swish.
      kernel_init: Initializer of the hidden kernels (and of the heads'
        kernels unless `last_kernel_init_*` are given); a name, a Keras
        initializer or a function. Each layer gets its own copy.
      last_kernel_init_value: Initializer of the value head's kernel.
      last_kernel_init_value_scaling: Factor applied to the value head's
        initial kernel (its initializer's values are multiplied by it).
      last_kernel_init_policy: Initializer of the policy head's kernel.
      last_kernel_init_policy_scaling: Factor applied to the policy head's
        initial kernel.
      correct_observations: Whether normalized observations pass through the
        normalizer's trainable correction, which keeps the agent's outputs
        unchanged when the statistics are updated.
      std_independent_of_input: Whether the second half of the distribution
        parameters (the raw Gaussian scales, for `normal_*_distribution`) is a
        trainable vector, initially 0, shared by all states instead of an
        output of the policy head.
      input_clipping: If set, normalized observations are clipped to
        `[-input_clipping, input_clipping]` (before the correction).

    Raises:
      ValueError: For an argument that cannot work (see the messages).
    """
    super().__init__(name='ContinuousControlAgent')
    if observation_normalizer is None:
      observation_normalizer = input_normalization.InputNormalization(
          running_statistics.FixedMeanStd())
    if not isinstance(observation_normalizer,
                      input_normalization.InputNormalization):
      raise ValueError('observation_normalizer must be an input_normalization.'
                       'InputNormalization, got '
                       f'{type(observation_normalizer).__name__}')
    if isinstance(layer_normalizer, tf.keras.layers.Layer):
      raise ValueError('layer_normalizer must create a layer per hidden layer '
                       '(a class or function), not be a layer instance: got '
                       f'{layer_normalizer!r}')
    num_layers_value = num_layers_value or num_layers_policy
    num_units_value = num_units_value or num_units_policy
    if shared and (num_layers_value, num_units_value) != (num_layers_policy,
                                                          num_units_policy):
      raise ValueError(
          'shared=True: policy and value read one MLP, so num_layers_value '
          f'({num_layers_value}) and num_units_value ({num_units_value}) must '
          f'equal num_layers_policy ({num_layers_policy}) and num_units_policy '
          f'({num_units_policy}); set them equal (or None)')
    for name, value in [('num_layers_policy', num_layers_policy),
                        ('num_layers_value', num_layers_value),
                        ('num_layers_rnn', num_layers_rnn)]:
      if value < 0:
        raise ValueError(f'{name} must be >= 0, got {value}')
    param_size = int(parametric_action_distribution.param_size)
    if std_independent_of_input and param_size % 2:
      raise ValueError('std_independent_of_input needs distribution parameters '
                       '(means, raw scales) of even size, got param_size '
                       f'{param_size}')
    if input_clipping is not None and input_clipping <= 0:
      raise ValueError(f'input_clipping must be positive, got {input_clipping}')

    self._parametric_action_distribution = parametric_action_distribution
    self.observation_normalizer = observation_normalizer
    self._residual_connections = residual_connections
    self._correct_observations = correct_observations
    self._std_independent_of_input = std_independent_of_input
    self._input_clipping = input_clipping
    self._num_layers_rnn = int(num_layers_rnn)
    activation = tf.nn.swish if activation is None else activation

    self._shared = shared
    mlp_shapes = ([('shared', num_layers_policy, num_units_policy)]
                  if shared else
                  [('policy', num_layers_policy, num_units_policy),
                   ('value', num_layers_value, num_units_value)])
    # One list per MLP (policy first); index -1 is the value MLP's.
    self._hidden_layers = [
        [tf.keras.layers.Dense(
            int(num_units), activation=activation,
            kernel_initializer=_fresh_initializer(kernel_init),
            name=f'{prefix}_hidden_{i}') for i in range(num_layers)]
        for prefix, num_layers, num_units in mlp_shapes]
    self._layer_normalizers = [
        [layer_normalizer() for _ in range(num_layers)]
        if layer_normalizer is not None else []
        for _, num_layers, _ in mlp_shapes]
    self._lstm_cells = [
        tf.keras.layers.LSTMCell(int(num_units_rnn), name=f'lstm_{i}')
        for i in range(self._num_layers_rnn)]

    policy_init = (kernel_init if last_kernel_init_policy is None
                   else last_kernel_init_policy)
    value_init = (kernel_init if last_kernel_init_value is None
                  else last_kernel_init_value)
    self._num_policy_outputs = (param_size // 2 if std_independent_of_input
                                else param_size)
    # The heads' input normalization; with `shared` one serves both heads.
    self._head_normalizers = []
    if layer_normalizer is not None:
      self._head_normalizers = [layer_normalizer()]
      if not shared:
        self._head_normalizers.append(layer_normalizer())
    self._policy_head = tf.keras.layers.Dense(
        self._num_policy_outputs,
        kernel_initializer=_fresh_initializer(
            policy_init, last_kernel_init_policy_scaling),
        name='policy_logits')
    self._value_head = tf.keras.layers.Dense(
        1, kernel_initializer=_fresh_initializer(
            value_init, last_kernel_init_value_scaling),
        name='baseline')
    # Raw scales shared by all states; created with the other variables.
    self.std_parameters = None

  def _keras_layers(self) -> List[tf.keras.layers.Layer]:
    """All Keras layers, in a fixed order (that of `variables`)."""
    layers = []
    for hidden, normalizers in zip(self._hidden_layers,
                                   self._layer_normalizers):
      layers.extend(hidden)
      layers.extend(normalizers)
    return (layers + self._lstm_cells + self._head_normalizers +
            [self._policy_head, self._value_head])

  @property
  def variables(self) -> Sequence[tf.Variable]:
    """All variables: Keras weights, the std vector, the normalizer's."""
    variables = [w for layer in self._keras_layers() for w in layer.weights]
    if self.std_parameters is not None:
      variables.append(self.std_parameters)
    return variables + list(self.observation_normalizer.variables)

  @property
  def trainable_variables(self) -> Sequence[tf.Variable]:
    """The variables the outputs depend on through training.

    The normalizer's correction is trainable only with
    `correct_observations`; without it the agent does not use it.
    """
    variables = [w for layer in self._keras_layers()
                 for w in layer.trainable_weights]
    if self.std_parameters is not None:
      variables.append(self.std_parameters)
    if self._correct_observations:
      variables.extend(self.observation_normalizer.trainable_variables)
    return variables

  @property
  def non_trainable_variables(self) -> Sequence[tf.Variable]:
    trainable = {id(v) for v in self.trainable_variables}
    return [v for v in self.variables if id(v) not in trainable]

  def initial_state(self, batch_size: Union[int, tf.Tensor]) -> Tuple:
    """The zero recurrent state for `batch_size` sequences.

    `()` without LSTM; else one `(h, c)` pair of `[batch_size, units]` zeros
    per LSTM layer.
    """
    return tuple((tf.zeros([batch_size, cell.units]),
                  tf.zeros([batch_size, cell.units]))
                 for cell in self._lstm_cells)

  def update_observation_normalization_statistics(
      self, observations: tf.Tensor) -> None:
    """Adds `observations` (`[..., size]`) to the normalization statistics.

    Called by the learner once per training step with the step's
    observations; with `correct_observations` the agent's outputs stay the
    same. In a replica context every replica passes its part of the batch.
    """
    self.observation_normalizer.update_normalization_statistics(
        tf.cast(observations, tf.float32))

  def preprocess_observations(self, observations: tf.Tensor) -> tf.Tensor:
    """What the network sees of `observations` (`[..., size]`, same shape).

    Normalization, then the clipping and the correction when configured.
    """
    x = self.observation_normalizer.normalize(
        tf.cast(observations, tf.float32))
    if self._input_clipping is not None:
      x = tf.clip_by_value(x, -self._input_clipping, self._input_clipping)
    if self._correct_observations:
      x = self.observation_normalizer.correct(x)
    return x

  def __call__(self, input_: Tuple[Any, Any], core_state: Any,
               unroll: bool = False,
               is_training: bool = False) -> Tuple[AgentOutput, Any]:
    """Runs the agent on one step (`[B, ...]`) or an unroll (`[T, B, ...]`).

    Args:
      input_: `(prev_actions, env_outputs)`; `prev_actions` is not used.
      core_state: The recurrent state before the (first) step, as returned
        by `initial_state` or a previous call (lists in its place work too).
      unroll: Whether the inputs are time-major unrolls.
      is_training: Whether this is a training call. The first call creates
        the observation statistics; it may be a training step
        (`unroll=False`), but not a training unroll.

    Returns:
      `(AgentOutput(action, policy_logits, baseline), new_core_state)`: the
      sampled actions, the distribution parameters `[..., param_size]` and
      the baselines `[...]`, where `...` is `[B]` or `[T, B]`.

    Raises:
      ValueError: If the statistics are not created yet and this is a
        training unroll (`is_training` and `unroll`), or if the observations
        do not match them.
    """
    prev_actions, env_outputs = input_
    env_outputs = common_networks.as_env_output(env_outputs)
    with self.name_scope:
      self._create_variables(env_outputs.observation,
                             training_unroll=is_training and unroll)
      return common_networks.apply_step_or_unroll(
          common_networks.torso_core_head(self._torso, self._core, self._head),
          prev_actions, env_outputs, self._core_state(core_state), unroll)

  def _core_state(self, core_state: Any) -> Any:
    """With LSTM, `core_state` as `((h, c), ...)`, one pair per layer.

    Lists are accepted as well, such as the `[[h, c], ...]` that Keras'
    `StackedRNNCells.get_initial_state` returns. Without LSTM the state is
    not used and passed through as it is (any structure, a tensor too).
    """
    if not self._num_layers_rnn:
      return core_state
    pairs = tuple(tuple(pair) for pair in core_state)
    if (len(pairs) != self._num_layers_rnn or
        any(len(pair) != 2 for pair in pairs)):
      raise ValueError(
          'ContinuousControlAgent: core_state must hold one (h, c) pair per '
          f'LSTM layer ({self._num_layers_rnn}), as initial_state(batch_size) '
          f'returns; got {len(pairs)} entries of lengths '
          f'{[len(pair) for pair in pairs]}')
    return pairs

  def _create_variables(self, observation: Any, training_unroll: bool) -> None:
    """Creates the statistics and the std vector at the first call.

    A training unroll runs inside the learner's update (per replica, under a
    gradient tape), after which the statistics are updated; they have to
    exist before, created once in the strategy scope with the other
    variables, so such a first call is refused. A single step (an
    inference, whether `is_training` or not) may create them.
    """
    size = tf.convert_to_tensor(observation).shape[-1]
    if size is None:
      raise ValueError('The last dimension of the observations must be known '
                       f'statically, got shape {observation.shape}')
    if not self.observation_normalizer.initialized and training_unroll:
      raise ValueError(
          'ContinuousControlAgent: the observation normalization statistics '
          'do not exist yet, and a training unroll (unroll=True, '
          'is_training=True) must not create them. Call the agent once on a '
          'single step first (unroll=False, e.g. on zero inputs inside the '
          'strategy scope, as the learner does), so that the statistics are '
          'created with the other variables and copied to the inference '
          'agent.')
    # Creates the statistics, or checks the size of existing ones.
    self.observation_normalizer.init_normalization_stats(size)
    if self._std_independent_of_input and self.std_parameters is None:
      self.std_parameters = tf.Variable(
          tf.zeros([self._num_policy_outputs]), trainable=True,
          name='std_parameters', aggregation=tf.VariableAggregation.MEAN)

  def _torso(self, unused_prev_actions: Any, env_outputs: Any) -> tf.Tensor:
    """The LSTM stack's input for `[N, ...]` inputs: the shared MLP's
    features with `shared`, else the preprocessed observations."""
    observation = self.preprocess_observations(env_outputs.observation)
    flat_size = int(np.prod(observation.shape[1:]))
    x = tf.reshape(observation, [-1, flat_size])
    return self._mlp(0, x) if self._shared else x

  def _mlp(self, index: int, x: tf.Tensor) -> tf.Tensor:
    """Applies the hidden layers of MLP `index` (0: policy or shared)."""
    normalizers = self._layer_normalizers[index]
    for i, layer in enumerate(self._hidden_layers[index]):
      output = layer(normalizers[i](x) if normalizers else x)
      x = x + output if self._residual_connections and i > 0 else output
    return x

  def _core(self, features: tf.Tensor, done: tf.Tensor,
            core_state: Any) -> Tuple[tf.Tensor, Any]:
    """Runs the LSTM stack over time (`[T, B, ...]` features)."""
    if not self._num_layers_rnn:
      return features, core_state
    return common_networks.unroll_recurrent(
        common_networks.lstm_stack_step(self._lstm_cells), features, done,
        core_state, self.initial_state(tf.shape(done)[1]))

  def _head(self, features: tf.Tensor) -> AgentOutput:
    """Distribution parameters, sampled actions and baselines (`[N, ...]`).

    Without `shared`, the policy and value MLPs come first, and each head
    normalizes its own input; with `shared` both heads read one tensor,
    normalized once.
    """
    if self._shared:
      if self._head_normalizers:
        features = self._head_normalizers[0](features)
      policy_features = value_features = features
    else:
      policy_features = self._mlp(0, features)
      value_features = self._mlp(-1, features)
      if self._head_normalizers:
        policy_features = self._head_normalizers[0](policy_features)
        value_features = self._head_normalizers[1](value_features)
    policy_logits = self._policy_head(policy_features)
    if self._std_independent_of_input:
      raw_scales = tf.broadcast_to(self.std_parameters,
                                   tf.shape(policy_logits))
      policy_logits = tf.concat([policy_logits, raw_scales], axis=-1)
    baseline = tf.squeeze(self._value_head(value_features), axis=-1)
    action = self._parametric_action_distribution(policy_logits).sample()
    return AgentOutput(action, policy_logits, baseline)
