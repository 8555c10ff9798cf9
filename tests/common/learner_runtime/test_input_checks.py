"""Tests of the learner's door: each request is checked before it joins an inference batch."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import input_checks
from seed_rl.common.structures import EnvOutput

pytestmark = pytest.mark.timeout(60)

_SPECS = EnvOutput(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.bool),
                   {'position': tf.TensorSpec([2], tf.float32),
                    'pixels': tf.TensorSpec([3], tf.uint8)},
                   tf.TensorSpec([], tf.bool), tf.TensorSpec([], tf.int32))


def _request(env_ids, run_ids, reward=None, position=None, abandoned=None, done=None):
  n = len(env_ids)
  done = np.zeros(n, bool) if done is None else np.asarray(done)
  reward = np.zeros(n, np.float32) if reward is None else np.asarray(reward, np.float32)
  position = np.zeros([n, 2], np.float32) if position is None else position
  abandoned = np.zeros(n, bool) if abandoned is None else np.asarray(abandoned)
  # Flattened like the inference signature: dict keys sorted (pixels, position).
  return [np.asarray(env_ids, np.int32), np.asarray(run_ids, np.int64), reward,
          done, np.zeros([n, 3], np.uint8), position, abandoned,
          np.zeros(n, np.int32), reward]


def _check(allow_abandoned=True):
  return input_checks.InferenceInputCheck(num_envs=4, env_output_specs=_SPECS,
                                          agent_name='VTRACE', allow_abandoned=allow_abandoned)


def test_a_good_request_passes():
  _check()(_request([0, 1], [7, 7]))


@pytest.mark.parametrize('request_, message', [
    (_request([3, 4], [1, 1]), r'env ids \[4\] are outside the learner.s \[0, 4\) '
                               r'\(--num_envs=4\).*--task and --env_batch_size'),
    (_request([-1, 0], [1, 1]), r'env ids \[-1\] are outside'),
    (_request([1, 1], [1, 1]), r'env ids \[1, 1\] repeat within one call'),
    (_request([0, 1], [1, 1], reward=[0., np.nan]),
     r'env_outputs.reward is not finite \(NaN or Inf\) for env ids \[1\]'),
    (_request([0, 1], [1, 1], position=np.array([[np.inf, 0.], [0., 0.]], np.float32)),
     r'env_outputs.observation.position is not finite \(NaN or Inf\) for env ids \[0\]'),
    (_request([2, 3], [1, 1], abandoned=[False, True], done=[True, False]),
     r'env_outputs.abandoned is set without env_outputs.done for env ids \[3\]'),
])
def test_bad_requests_are_refused_naming_the_field_and_env_ids(request_, message):
  with pytest.raises(ValueError, match=message):
    _check()(request_)


@pytest.mark.parametrize('allow_abandoned', [True, False])
def test_abandoned_episodes_pass_and_an_agent_without_support_warns_once(allow_abandoned,
                                                                        caplog):
  check = _check(allow_abandoned)
  caplog.set_level('WARNING')
  for _ in range(3):
    check(_request([2, 3], [1, 1], abandoned=[False, True], done=[True, True]))
  warnings = [r.getMessage() for r in caplog.records
              if 'does not support abandoned' in r.getMessage()]
  if allow_abandoned:
    assert not warnings
  else:
    assert warnings == ['VTRACE does not support abandoned episodes (env ids [3] were cut '
                        'short, e.g. by a time limit): it treats them as terminal.']


def test_a_single_row_without_batch_dimension_is_checked_too():
  with pytest.raises(ValueError, match='outside'):
    _check()([a[0] for a in _request([9], [1])])


def test_a_restarted_actor_is_fine_but_an_alternating_duplicate_is_refused(caplog):
  check = _check()
  check(_request([0, 1], [5, 5]))
  check(_request([0, 1], [5, 5]))
  check(_request([0, 1], [6, 6]))  # A restart: new run ids; the learner resets these envs.
  check(_request([0, 1], [6, 6]))
  caplog.set_level('WARNING')
  for _ in range(3):  # The replaced actor is still alive: two actors with the same --task.
    with pytest.raises(ValueError, match=r'env ids \[0, 1\] belong to another actor now \(run '
                                         r'ids \[6, 6\] replaced run ids \[5, 5\]\)'):
      check(_request([0, 1], [5, 5]))
  check(_request([0, 1], [6, 6]))  # The newer actor goes on.
  refusals = [r for r in caplog.records if 'Refusing an actor' in r.getMessage()]
  assert len(refusals) <= 1  # One warning, not one per call.
