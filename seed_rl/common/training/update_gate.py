"""Learner state updates that are refused, and counted, when their result is not finite.

The optimizer step is skipped when its loss or gradients are not finite
(`learner_runtime.training`); every other update of learner state driven by data (running
statistics, observation normalizers, PopArt, replay contents and priorities) goes through this
module, so that one extreme but finite input (an observation of 1e30 squares to infinity in
float32) cannot leave a NaN or an Inf in a variable, a checkpoint or an exported policy.

An update is a list of `(variable, new value)` pairs applied together or not at all: when any
new value is not finite, every variable keeps its old value and the update is counted in the
`RefusedUpdates` counter of its kind. The choice is made with `tf.where`, not with a `tf.cond`
around the assignments, so the same code runs in a replica context of a `tf.distribute`
strategy; callers pass values every replica computes alike (all-reduced statistics), so every
replica decides the same way and the counters, mirrored with `ONLY_FIRST_REPLICA`
aggregation, count each refusal once.

Counters stay out of checkpoints and exported policies (they are not tracked by the modules
that own them), so checkpoints written before them restore unchanged. `refused_counts()` gives
the totals of the process by kind, for the learner's log and progress line.
"""

import threading
from typing import Dict, Optional, Sequence, Tuple
import weakref

import tensorflow as tf

_COUNTERS = weakref.WeakSet()
_COUNTERS_LOCK = threading.Lock()


class RefusedUpdates(object):
  """Counts the refused updates of one kind of learner state (e.g. 'replay rows').

  Create it where the state's variables are created (inside the strategy's scope when they
  are mirrored). A plain object, not a `tf.Module`: the module owning it does not track it, so
  the count is not part of its checkpoint.
  """

  def __init__(self, kind: str):
    self.kind = kind
    self.count = tf.Variable(
        0, dtype=tf.int64, trainable=False, name='refused_' + kind.replace(' ', '_'),
        synchronization=tf.VariableSynchronization.ON_WRITE,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    with _COUNTERS_LOCK:
      _COUNTERS.add(self)

  def add(self, refused) -> None:
    """Adds `refused` (a bool or an integer tensor) to the count."""
    self.count.assign_add(tf.cast(refused, tf.int64))


def refused_counts() -> Dict[str, int]:
  """`{'refused <kind>': total}` over the live counters of the process, kinds with a count."""
  with _COUNTERS_LOCK:
    counters = list(_COUNTERS)
  totals = {}
  for counter in counters:
    count = int(counter.count.numpy())
    if count:
      key = f'refused {counter.kind}'
      totals[key] = totals.get(key, 0) + count
  return dict(sorted(totals.items()))


@tf.autograph.experimental.do_not_convert
def all_finite(tensors: Sequence[Optional[tf.Tensor]]) -> tf.Tensor:
  """Whether every element of every floating-point tensor is finite (None and integer
  tensors are skipped)."""
  checks = [tf.reduce_all(tf.math.is_finite(t)) for t in map(_as_tensor, tensors)
            if t is not None and t.dtype.is_floating]
  return tf.reduce_all(checks) if checks else tf.constant(True)


@tf.autograph.experimental.do_not_convert
def finite_rows(tensors: Sequence[tf.Tensor]) -> tf.Tensor:
  """`<bool>[n]`: whether row i of every floating-point tensor (leading dimension n, shared
  by all of them) is finite in all its elements."""
  rows = [tf.reduce_all(tf.math.is_finite(t), axis=list(range(1, t.shape.rank)))
          for t in map(_as_tensor, tensors) if t.dtype.is_floating]
  if not rows:
    return tf.ones([tf.shape(_as_tensor(tensors[0]))[0]], tf.bool)
  return tf.reduce_all(tf.stack(rows), axis=0)


@tf.autograph.experimental.do_not_convert
def assign_if_finite(counter: RefusedUpdates,
                     assignments: Sequence[Tuple[tf.Variable, tf.Tensor]],
                     wanted=True) -> tf.Tensor:
  """Assigns every new value when all are finite (and `wanted`), none otherwise.

  Args:
    counter: counts an update that was wanted and refused.
    assignments: `(variable, new value)` pairs.
    wanted: a bool (tensor) saying whether the update should happen at all: False keeps the
      old values without counting a refusal (e.g. a dependent update whose source was
      already refused and counted).

  Returns:
    `<bool>[]`: whether the new values were assigned.
  """
  values = [tf.convert_to_tensor(value, variable.dtype) for variable, value in assignments]
  finite = all_finite(values)
  wanted = tf.convert_to_tensor(wanted, tf.bool)
  applied = tf.logical_and(wanted, finite)
  for (variable, _), value in zip(assignments, values):
    variable.assign(tf.where(applied, value, variable.read_value()))
  counter.add(tf.logical_and(wanted, tf.logical_not(finite)))
  return applied


def _as_tensor(value):
  return value if value is None else tf.convert_to_tensor(value)
