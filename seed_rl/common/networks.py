"""Keras plumbing every seed_rl network shares.

The V-trace agents (`seed_rl.agents.vtrace.networks`, the Football network) and the R2D2
Q-networks (Atari, Gymnasium) all follow one calling convention: one inference step on `[B, ...]`
inputs (`unroll=False`) or a time-major `[T, B, ...]` unroll for training (`unroll=True`); a
torso applied to every step at once, a recurrent core stepped through time whose state restarts
where `env_outputs.done` marks a new episode, and a head applied to every step at once. This
module holds that plumbing once, so the networks only define their layers:

- `apply_step_or_unroll` and `torso_core_head`: the calling convention;
- `unroll_recurrent`, `reset_where_done` and `lstm_stack_step`: the recurrent core over time;
- `batch_apply`: a `[N, ...]` function on `[T, B, ...]` inputs;
- `as_env_output`: `env_outputs` as an `EnvOutput`, also when given as a plain tuple;
- `track_layers`: layers held in lists made visible to `tf.train.Checkpoint`.

It imports only TensorFlow and `seed_rl.common.structures`.
"""

from collections.abc import Callable, Sequence
from typing import Any, Optional

import tensorflow as tf

from seed_rl.common.structures import EnvOutput

# `(step_inputs, state) -> (step_outputs, new_state)` on `[B, ...]` tensors (or nests of them).
StepFn = Callable[[Any, Any], tuple[Any, Any]]
# `(prev_actions, env_outputs, state) -> (outputs, new_state)` on time-major inputs.
UnrollFn = Callable[[Any, EnvOutput, Any], tuple[Any, Any]]


@tf.autograph.experimental.do_not_convert
def as_env_output(env_outputs: Any) -> EnvOutput:
  """Returns `env_outputs` as an `EnvOutput`.

  Networks take `env_outputs` as an `EnvOutput` or, as the original SEED RL networks did
  (they unpacked it by position), as any 5-element tuple or list in `EnvOutput` order:
  reward, done, observation, abandoned, episode_step.

  Raises:
    TypeError: `env_outputs` is not a tuple or list.
    ValueError: it does not have exactly 5 elements.
  """
  if isinstance(env_outputs, EnvOutput):
    return env_outputs
  if not isinstance(env_outputs, Sequence) or isinstance(env_outputs, (str, bytes)):
    raise TypeError(
        f'env_outputs must be an EnvOutput or a tuple/list in EnvOutput order '
        f'({", ".join(EnvOutput._fields)}), got {type(env_outputs).__name__}.')
  if len(env_outputs) != len(EnvOutput._fields):
    raise ValueError(
        f'env_outputs must have {len(EnvOutput._fields)} elements in EnvOutput order '
        f'({", ".join(EnvOutput._fields)}), got {len(env_outputs)}.')
  return EnvOutput(*env_outputs)


@tf.autograph.experimental.do_not_convert
def is_time_major(env_outputs: Any, unroll: Optional[bool]) -> bool:
  """Whether inputs are time-major `[T, B, ...]`: `unroll` when given, otherwise whether
  `env_outputs.done` (which has exactly the batch dimensions) is `[T, B]` rather than `[B]`.

  Raises:
    ValueError: `unroll` is None and `done` is neither `[B]` nor `[T, B]`.
  """
  if unroll is not None:
    return bool(unroll)
  done = tf.convert_to_tensor(as_env_output(env_outputs).done)
  if done.shape.rank not in (1, 2):
    raise ValueError('env_outputs.done must be [B] (one step) or [T, B] (an unroll) to tell '
                     f'which the inputs are, got shape {done.shape}; or pass unroll=True or '
                     'unroll=False.')
  return done.shape.rank == 2


def track_layers(model: tf.keras.layers.Layer, name: str, layers: Sequence) -> list:
  """Makes `layers` (a possibly nested list) visible to `tf.train.Checkpoint`.

  Keras 3 tracks layers held in lists for its own weights, but `tf.train.Checkpoint` only sees
  layers held directly in attributes, so each one also gets an attribute `{name}_{index}`.
  Returns `layers` for storing as the list the model uses.
  """
  for index, layer in enumerate(layers):
    if isinstance(layer, (list, tuple)):
      track_layers(model, f'{name}_{index}', layer)
    else:
      setattr(model, f'{name}_{index}', layer)
  return list(layers)


def batch_apply(fn: Callable, inputs: Sequence) -> Any:
  """Applies `fn` to `[T, B, ...]` inputs merged to `[T*B, ...]`; outputs are `[T, B, ...]`.

  `inputs` is the sequence of `fn`'s arguments (each a tensor or a nest of them). Torsos and
  heads work on one batch dimension; this runs them on every step of an unroll in one call.
  """
  time_dim = tf.shape(tf.nest.flatten(inputs)[0])[0]
  merged = tf.nest.map_structure(
      lambda t: tf.reshape(t, tf.concat([[-1], tf.shape(t)[2:]], 0)), inputs)
  outputs = fn(*merged)
  return tf.nest.map_structure(
      lambda t: tf.reshape(t, tf.concat([[time_dim, -1], tf.shape(t)[1:]], 0)), outputs)


def reset_where_done(done: Any, state: Any, initial_state: Any) -> Any:
  """Replaces the rows of the `state` nest whose episode starts now by `initial_state`.

  Args:
    done: `<bool>[B]`, true where a new episode starts.
    state: nest of `[B, ...]` tensors.
    initial_state: nest of `[B, ...]` tensors with the structure of `state`.

  Returns:
    `state` with row b of every tensor taken from `initial_state` where `done[b]`.
  """
  def select(initial, current):
    mask = tf.reshape(done, [-1] + [1] * (current.shape.rank - 1))
    return tf.where(mask, initial, current)
  return tf.nest.map_structure(select, initial_state, state)


def unroll_recurrent(step_fn: StepFn, inputs: Any, done: Any, start_state: Any,
                     initial_state: Any) -> tuple[Any, Any]:
  """Runs `step_fn` over time, restarting from `initial_state` where an episode starts.

  Every recurrent part of the networks (LSTM stacks, Atari's frame stack) goes through this
  one loop, so the reset rule is the same everywhere.

  Args:
    step_fn: `(step_inputs, state) -> (step_outputs, new_state)` on `[B, ...]` tensors.
    inputs: (nest of) time-major `[T, B, ...]` tensors; T must be known statically.
    done: `<bool>[T, B]`; before step t the rows with `done[t]` get `initial_state`.
    start_state: (nest of) `[B, ...]` state before the first step.
    initial_state: (nest of) `[B, ...]` state of a new episode, structured like `start_state`.

  Returns:
    `(outputs, final_state)`: the step outputs stacked to `[T, B, ...]` and the state after the
    last step.

  Raises:
    ValueError: `inputs` and `done` have different numbers of time steps.
  """
  step_inputs = [tf.nest.pack_sequence_as(inputs, step)
                 for step in zip(*[tf.unstack(t) for t in tf.nest.flatten(inputs)])]
  step_dones = tf.unstack(done)
  if len(step_inputs) != len(step_dones):
    raise ValueError(f'inputs have {len(step_inputs)} time steps but done has {len(step_dones)}.')
  state = start_state
  outputs = []
  for step_input, step_done in zip(step_inputs, step_dones):
    state = reset_where_done(step_done, state, initial_state)
    output, state = step_fn(step_input, state)
    outputs.append(output)
  return tf.nest.map_structure(lambda *steps: tf.stack(steps), *outputs), state


def lstm_stack_step(cells: Sequence[tf.keras.layers.LSTMCell]) -> StepFn:
  """The step function of a stack of LSTM cells, for `unroll_recurrent`.

  The state is `((h, c), ...)`, one pair per cell; each cell's output is the next one's input
  and the last cell's output is the step's output.
  """
  def step(inputs, core_state):
    new_state = []
    for cell, (h, c) in zip(cells, core_state):
      inputs, (h, c) = cell(inputs, [h, c])
      new_state.append((h, c))
    return inputs, tuple(new_state)
  return step


@tf.autograph.experimental.do_not_convert
def add_time_dimension(nest: Any) -> Any:
  """`[B, ...]` -> `[1, B, ...]` for every tensor (or array) of `nest`."""
  return tf.nest.map_structure(lambda t: tf.convert_to_tensor(t)[tf.newaxis], nest)


@tf.autograph.experimental.do_not_convert
def remove_time_dimension(nest: Any) -> Any:
  """`[1, B, ...]` -> `[B, ...]` for every tensor of `nest`."""
  return tf.nest.map_structure(lambda t: t[0], nest)


def apply_step_or_unroll(unroll_fn: UnrollFn, prev_actions: Any, env_outputs: Any,
                         state: Any, unroll: bool) -> tuple[Any, Any]:
  """The agent calling convention around a network's time-major `unroll_fn`.

  Without `unroll` the inputs are `[B, ...]` (one inference step): they get a time dimension of
  1 for `unroll_fn` and the outputs lose it again. With `unroll` they are time-major
  `[T, B, ...]` (training) and go to `unroll_fn` as they are. Either way `env_outputs` reaches
  `unroll_fn` as an `EnvOutput` (see `as_env_output`).

  Returns:
    `(outputs, new_state)` of `unroll_fn`, outputs `[B, ...]` without `unroll`.
  """
  env_outputs = as_env_output(env_outputs)
  if unroll:
    return unroll_fn(prev_actions, env_outputs, state)
  prev_actions, env_outputs = add_time_dimension((prev_actions, env_outputs))
  outputs, state = unroll_fn(prev_actions, env_outputs, state)
  return remove_time_dimension(outputs), state


def torso_core_head(torso: Callable, core: Callable, head: Callable) -> UnrollFn:
  """The time-major unroll of a torso, a recurrent core and a head, for `apply_step_or_unroll`.

  Args:
    torso: `(prev_actions, env_outputs) -> features` on `[N, ...]` inputs (N = T*B).
    core: `(features, done, core_state) -> (core_outputs, new_core_state)` on time-major
      `[T, B, ...]` features and `<bool>[T, B]` done.
    head: `core_outputs -> outputs` on `[N, ...]` inputs.

  Returns:
    `(prev_actions, env_outputs, core_state) -> (outputs [T, B, ...], new_core_state)`.
  """
  def unroll_fn(prev_actions, env_outputs, core_state):
    torso_outputs = batch_apply(torso, (prev_actions, env_outputs))
    core_outputs, core_state = core(torso_outputs, env_outputs.done, core_state)
    return batch_apply(head, (core_outputs,)), core_state
  return unroll_fn
