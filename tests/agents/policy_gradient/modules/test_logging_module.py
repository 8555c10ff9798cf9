"""Tests for seed_rl.common.training.logging_module (also the original's
seed_rl.agents.policy_gradient.modules.logging_module)."""

import collections
import os
import threading

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import logging_module


class _Logger(tf.Module, logging_module.LoggingModule):

  def __init__(self, key='test'):
    super().__init__()
    self.key = key
    self.weight = tf.Variable(2.)

  def __call__(self, tensor):
    self.log(self.key, tf.reduce_mean(tensor) * self.weight)
    return tensor


class _Plain(tf.Module):
  """Not a LoggingModule itself, but holds one."""

  def __init__(self):
    super().__init__()
    self.inner = _Logger()

  def __call__(self, tensor):
    return self.inner(tensor)


class _Wrapper(tf.Module):

  def __init__(self):
    super().__init__()
    self.plain = _Plain()

  @tf.function
  def step(self, tensor):
    with logging_module.LoggingTape(self.plain) as logs:
      self.plain(tensor)
    return logs


@pytest.mark.timeout(60)
def test_log_is_a_no_op_without_a_dict():
  module = _Logger()
  attributes = dict(vars(module))
  module(tf.zeros((20, 10)))
  module(tf.zeros((20, 10)))  # The same key twice: no "already exists".
  module.log('not_a_tensor', 3.)  # Not checked: nothing is recorded.
  assert vars(module) == attributes
  logs = {}
  module.set_logging_dict(logs)
  assert logs == {}  # Nothing was kept for a dict installed later.
  with pytest.raises(ValueError, match='needs to be a Tensor'):
    module.log('not_a_tensor', 3.)  # With a dict the same call is checked.
  module.unset_logging_dict()


@pytest.mark.timeout(60)
def test_log_writes_into_the_given_dict():
  logs = {}
  module = _Logger()
  module.set_logging_dict(logs)
  module(tf.range(200, dtype=tf.float32))
  module.unset_logging_dict()
  module(tf.zeros(3))  # No-op again.
  assert list(logs) == ['test']
  np.testing.assert_allclose(logs['test'], 199.)
  with pytest.raises(ValueError, match='dict'):
    module.set_logging_dict([])


@pytest.mark.timeout(60)
def test_tape_collects_from_submodules_in_a_tf_function():
  module = _Wrapper()
  first = tf.range(200, dtype=tf.float32)
  second = tf.ones(200)
  np.testing.assert_allclose(module.step(first)['test'], 199.)
  np.testing.assert_allclose(module.step(second)['test'], 2.)
  assert module.plain.inner._logging_dict is None


@pytest.mark.timeout(60)
def test_tape_shares_one_ordered_dict():
  first, second = _Logger('b'), _Logger('a')
  other = tf.Module()  # Ignored: not a LoggingModule.
  with logging_module.LoggingTape([first, second, other, first]) as logs:
    second(tf.ones(2))
    first(tf.ones(2))
    variable = tf.Variable(5.)
    first.log('variable', variable)
    variable.assign(6.)
  assert isinstance(logs, collections.OrderedDict)
  assert list(logs) == ['a', 'b', 'variable']
  assert float(logs['variable']) == 5.  # The value when logged.
  second(tf.ones(2))  # After the tape: no-op, the entries stay.
  assert len(logs) == 3


@pytest.mark.timeout(60)
def test_duplicate_keys_and_non_tensors_raise():
  module = _Logger()
  with logging_module.LoggingTape(module):
    module(tf.ones(2))
    with pytest.raises(ValueError, match='already exists'):
      module(tf.ones(2))
    with pytest.raises(ValueError, match='Tensor'):
      module.log('number', 3.)


@pytest.mark.timeout(60)
def test_taping_a_module_twice_raises_and_cleans_up():
  outer_only, shared = _Logger('outer'), _Logger('shared')
  fresh = _Logger('fresh')
  with logging_module.LoggingTape([outer_only, shared]) as logs:
    tape = logging_module.LoggingTape([fresh, shared])
    with pytest.raises(logging_module.ModuleAlreadyTapedError):
      tape.__enter__()
    assert fresh._logging_dict is None  # Undone.
    shared(tf.ones(2))  # Still logs into the outer tape.
  assert list(logs) == ['shared']


@pytest.mark.timeout(60)
def test_taped_module_still_tracks_variables_and_checkpoints(tmp_path):
  module = _Logger()
  with logging_module.LoggingTape(module) as logs:
    module(tf.ones(2))
    assert len(module.variables) == 1
    tf.train.Checkpoint(module=module).write(os.path.join(tmp_path, 'ckpt'))
  assert list(logs) == ['test']


@pytest.mark.timeout(60)
def test_tapes_are_per_thread():
  """Replicas of a MirroredStrategy trace in parallel threads."""
  module = _Logger()
  barrier = threading.Barrier(2)
  results, errors = {}, []

  def replica(value):
    try:
      with logging_module.LoggingTape(module) as logs:
        barrier.wait(timeout=10)  # Both tapes are installed now.
        module(tf.fill([3], value))
        barrier.wait(timeout=10)
      results[value] = float(logs['test'])
    except Exception as e:  # pylint: disable=broad-except
      errors.append(e)

  threads = [threading.Thread(target=replica, args=(float(v),))
             for v in (1, 2)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join(timeout=30)
  assert not errors, errors
  assert results == {1.: 2., 2.: 4.}
  assert module._logging_dict is None
