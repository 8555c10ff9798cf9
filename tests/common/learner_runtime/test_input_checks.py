"""Tests of the learner's door: each request is checked before it joins an inference batch."""

import contextlib
import time

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import input_checks
from seed_rl.common.structures import EnvOutput
from seed_rl.grpc import caller

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


def _check(allow_abandoned=True, grace=60., refuse_observations_above=1e9,
           refuse_rewards_above=1e9):
  return input_checks.InferenceInputCheck(
      num_envs=4, env_output_specs=_SPECS, agent_name='VTRACE', allow_abandoned=allow_abandoned,
      takeover_grace_secs=grace, refuse_observations_above=refuse_observations_above,
      refuse_rewards_above=refuse_rewards_above)


@contextlib.contextmanager
def _on_stream(stream):
  """Calls of the check inside come on `stream`, as the server's handler thread of a stream
  makes them (None: a direct call)."""
  previous = caller.current()
  caller._local.stream = stream  # pylint: disable=protected-access
  try:
    yield stream
  finally:
    caller._local.stream = previous  # pylint: disable=protected-access


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
    (_request([0, 1], [1, 1], reward=[0., -1e10]),
     r'env_outputs.reward is beyond 1e\+09 in absolute value for env ids \[1\] \(the '
     r'learner.s --refuse_rewards_above=1e\+09; 0: no bound\)'),
    (_request([0, 1], [1, 1], position=np.array([[0., 0.], [1e30, 0.]], np.float32)),
     r'env_outputs.observation.position is beyond 1e\+09 in absolute value for env ids \[1\] '
     r'\(the learner.s --refuse_observations_above=1e\+09; 0: no bound\)'),
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


def test_no_bound_lets_finite_extremes_pass_but_not_nan():
  check = _check(refuse_observations_above=0., refuse_rewards_above=0.)
  huge = np.full([2, 2], 3e38, np.float32)
  check(_request([0, 1], [1, 1], reward=[-3e38, 3e38], position=huge))
  with pytest.raises(ValueError, match='reward is not finite'):
    check(_request([0, 1], [1, 1], reward=[np.inf, 0.]))


@pytest.mark.parametrize('flag', ['actor_takeover_grace_secs', 'refuse_observations_above',
                                  'refuse_rewards_above'])
def test_a_negative_setting_is_refused_naming_its_flag(flag):
  settings = dict(grace=60., refuse_observations_above=1e9, refuse_rewards_above=1e9)
  settings[{'actor_takeover_grace_secs': 'grace'}.get(flag, flag)] = -1.
  with pytest.raises(ValueError, match=f'--{flag} must be 0 or more, got -1.0'):
    _check(**settings)


def test_a_live_owner_keeps_its_env_ids_and_a_closed_one_frees_them_at_once(caplog):
  check = _check()
  owner, newcomer = caller.Stream('ipv4:10.0.0.1:1'), caller.Stream('ipv4:10.0.0.2:2')
  with _on_stream(owner):
    check(_request([0, 1], [5, 5]))
  caplog.set_level('WARNING')
  for _ in range(3):  # Another connection, new run ids: refused while the owner lives.
    with _on_stream(newcomer), pytest.raises(
        ValueError, match=r'env ids \[0, 1\] are owned by a live actor on another connection: '
                          r'is another actor running with the same --task\?.*'
                          r'--actor_takeover_grace_secs=60 \(in 60 s at the earliest\)'):
      check(_request([0, 1], [6, 6]))
  refusals = [r.getMessage() for r in caplog.records if 'Refusing' in r.getMessage()]
  assert len(refusals) == 1, refusals  # One warning, not one per call.
  assert refusals[0].startswith('Refusing 1 call(s) from ipv4:10.0.0.2:2: env ids [0, 1]')
  assert 'owners: ipv4:10.0.0.1:1' in refusals[0]
  with _on_stream(newcomer), pytest.raises(ValueError, match=r'env ids \[1\] are owned'):
    check(_request([1, 2], [6, 6]))  # Refused as a whole: env id 2 stays free,
  with _on_stream(caller.Stream('ipv4:10.0.0.3:3')):
    check(_request([2], [8]))  # and a third caller may have it.
  with _on_stream(owner):
    check(_request([0, 1], [5, 5]))  # The owner goes on,
    check(_request([0, 1], [7, 7]))  # and may restart on its own connection.
  owner.closed = True  # The owner's connection ends (its process died, say).
  with _on_stream(newcomer):
    check(_request([0, 1], [6, 6]))  # Taken over at once.
  with _on_stream(caller.Stream('ipv4:10.0.0.1:3')), pytest.raises(ValueError, match='owned'):
    check(_request([0, 1], [7, 7]))  # Now the newcomer is the live owner.


def test_an_owner_silent_for_the_grace_period_is_replaced():
  check = _check(grace=0.2)
  with _on_stream(caller.Stream('owner')):
    check(_request([0, 1], [5, 5]))
  newcomer = caller.Stream('newcomer')
  with _on_stream(newcomer), pytest.raises(ValueError, match='owned by a live actor'):
    check(_request([0, 1], [6, 6]))
  time.sleep(0.3)
  with _on_stream(newcomer):
    check(_request([0, 1], [6, 6]))


def test_direct_calls_count_as_one_caller():
  check = _check()
  check(_request([0, 1], [5, 5]))
  check(_request([0, 1], [6, 6]))  # A restart of the one direct caller.
  with _on_stream(caller.Stream('a stream')), pytest.raises(ValueError, match='owned'):
    check(_request([0, 1], [7, 7]))


def test_the_same_run_ids_on_another_stream_are_the_same_actor():
  check = _check()
  first, second = caller.Stream('first'), caller.Stream('second')
  with _on_stream(first):
    check(_request([0, 1], [5, 5]))
  with _on_stream(second):
    check(_request([0, 1], [5, 5]))
  first.closed = True  # The owner's latest connection is the second one, which lives.
  with _on_stream(caller.Stream('third')), pytest.raises(ValueError, match='owned'):
    check(_request([0, 1], [6, 6]))
