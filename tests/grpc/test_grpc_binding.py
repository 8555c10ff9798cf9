"""seed_rl.grpc.binding: the fast call path of a bound function means what `fn(*args)` means."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.grpc import binding

Pair = collections.namedtuple('Pair', 'total nothing')


def _call_path(fn) -> str:
  concrete = fn.get_concrete_function()
  flat_specs = tf.nest.flatten(fn.input_signature)
  num_outputs = len([o for o in tf.nest.flatten(concrete.structured_outputs) if o is not None])
  return binding._make_call(fn, concrete, flat_specs, num_outputs).__name__  # pylint: disable=protected-access


def _runner(fn):
  return binding.bind_function(fn, binding.cpu_device_name()).runner


@pytest.mark.timeout(60)
def test_plain_functions_take_the_direct_execute_path():
  """Fails when a TensorFlow upgrade silently moves bound functions to a slower path."""
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32), tf.TensorSpec([2], tf.float32)])
  def f(a, b):
    return a + 1, b * 2

  assert _call_path(f) == 'call_execute'


@pytest.mark.timeout(60)
def test_direct_path_matches_the_structured_call():
  weights = tf.Variable([1.0, 2.0])
  calls = tf.Variable(0)

  @tf.function(input_signature=[{'x': tf.TensorSpec([2], tf.float32),
                                 'n': tf.TensorSpec([], tf.int32)}])
  def f(inputs):
    calls.assign_add(1)
    return Pair(total=inputs['x'] * weights + tf.cast(inputs['n'] + calls, tf.float32),
                nothing=None)

  runner = _runner(f)
  x, n = np.array([3.0, 4.0], np.float32), np.array(5, np.int32)
  (ours,) = runner([n, x])  # tf.nest order: 'n' before 'x'.
  theirs = f({'x': x, 'n': n}).total.numpy()
  np.testing.assert_allclose(ours, [3.0 + 6, 8.0 + 6])
  np.testing.assert_allclose(theirs, [3.0 + 7, 8.0 + 7])
  weights.assign([0.0, 0.0])  # Captured variables are read at call time.
  np.testing.assert_allclose(runner([n, x])[0], [8.0, 8.0])
  assert calls.numpy() == 3


@pytest.mark.timeout(60)
def test_direct_path_reports_errors_like_call_flat():
  @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
  def checked(x):
    tf.debugging.assert_positive(x, message='x must be positive')
    return x * 2

  bad = np.array([1, -1], np.int32)
  with pytest.raises(tf.errors.InvalidArgumentError) as ours:
    _runner(checked)([bad])
  with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
    checked(bad)
  assert 'x must be positive' in ours.value.message
  assert 'Detected at node' in ours.value.message  # Node names and stack traces interpolated.
  assert ours.value.message.split('\n')[-1] == theirs.value.message.split('\n')[-1]


@pytest.mark.timeout(60)
def test_function_without_outputs():
  seen = tf.Variable(0)

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
  def record(x):
    seen.assign(x)

  assert _call_path(record) == 'call_execute'
  assert _runner(record)([np.array(7, np.int32)]) == []
  assert seen.numpy() == 7
