"""The learner's door over real gRPC: a live actor keeps its env ids, a gone one frees them.

A server bound with the learner's `InferenceInputCheck` as its validator serves real actors
(`actor.actor_loop`) and raw clients, as the learner does.
"""

import threading
import time
import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common import actor
from seed_rl.common import specs
from seed_rl.common.learner_runtime import input_checks
from seed_rl.common.structures import EnvOutput
from seed_rl.grpc import errors

pytestmark = pytest.mark.timeout(60)

_SPACE = gymnasium.make('CartPole-v1').observation_space
_REFUSED = errors.error_classes(errors.INVALID_ARGUMENT)


class _Learner(object):
  """A server with the learner's door whose inference function counts each env id's rows and
  records the run ids of every request the door sees (refused ones too)."""

  def __init__(self, tmp_path, grace=60.):
    self.address = f'unix:{tmp_path}/learner.sock'
    self.rows = np.zeros(4, np.int64)  # Rows that reached the function, per env id.
    self.requests = []  # (env ids, run ids) of every request the door checked.
    check = input_checks.InferenceInputCheck(
        4, specs.env_output_specs_for(_SPACE), 'TEST', takeover_grace_secs=grace,
        refuse_observations_above=1e9, refuse_rewards_above=1e9)

    def validate(arrays):
      self.requests.append((np.array(arrays[0]).tolist(), np.array(arrays[1]).tolist()))
      check(arrays)

    def count(env_ids):
      np.add.at(self.rows, env_ids.numpy(), 1)
      return 0

    @tf.function(input_signature=specs.inference_input_specs(2, specs.env_output_specs_for(
        _SPACE)))
    def inference(env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
      tf.py_function(count, [env_ids], tf.int32)
      return tf.zeros([2], tf.int64)

    self.server = grpc.Server([self.address])
    self.server.bind(inference, validate)
    self.server.start()

  def wait_for_rows(self, env_id, rows, timeout=30):
    deadline = time.time() + timeout
    while self.rows[env_id] < rows:
      assert time.time() < deadline, f'env {env_id} reached {self.rows[env_id]} of {rows} rows'
      time.sleep(0.02)


def _config(learner, **overrides):
  values = dict(server_address=learner.address, task=0, env_batch_size=2, render=False,
                seed=None, double_buffered_acting=False, grpc_token_file=None,
                grpc_tls_ca_file=None)
  values.update(overrides)
  return types.SimpleNamespace(**values)


def _cartpole(env_id, config):
  del env_id, config
  return gymnasium.make('CartPole-v1')


def _call(client, env_ids, run_ids, observation=0.):
  n = len(env_ids)
  env_output = EnvOutput(np.zeros(n, np.float32), np.zeros(n, bool),
                         np.full([n, 4], observation, np.float32), np.zeros(n, bool),
                         np.zeros(n, np.int32))
  return client.inference(np.asarray(env_ids, np.int32), np.asarray(run_ids, np.int64),
                          env_output, np.zeros(n, np.float32))


def _start_actor(learner, **overrides):
  """An actor thread until the learner finishes; what it returned or raised goes to `ended`."""
  ended = []

  def act():
    try:
      ended.append(actor.actor_loop(_cartpole, _config(learner, **overrides)))
    except Exception as e:  # pylint: disable=broad-except
      ended.append(e)

  thread = threading.Thread(target=act, daemon=True)
  thread.start()
  return thread, ended


def test_a_newcomer_cannot_take_the_env_ids_of_a_live_actor_which_keeps_stepping(tmp_path):
  learner = _Learner(tmp_path)
  thread, ended = _start_actor(learner)
  try:
    learner.wait_for_rows(0, 5)
    attacker = grpc.Client(learner.address)
    try:
      for _ in range(20):  # Each request with new run ids for the actor's env ids.
        with pytest.raises(_REFUSED, match=r'env ids \[0, 1\] are owned by a live actor on '
                                           r'another connection: is another actor running '
                                           r'with the same --task\?'):
          _call(attacker, [0, 1], np.random.randint(1, 2**62, 2))
      rows = learner.rows[0]
      learner.wait_for_rows(0, rows + 20)  # The actor goes on stepping.
      assert thread.is_alive() and not ended
    finally:
      attacker.close()
  finally:
    learner.server.finish()
    thread.join(30)
    learner.server.shutdown()
  assert ended == [None]  # It stopped when training finished, not refused.


def test_a_newcomer_takes_over_at_once_when_the_owner_s_connection_closes(tmp_path):
  learner = _Learner(tmp_path)
  owner, newcomer = grpc.Client(learner.address), grpc.Client(learner.address)
  try:
    _call(owner, [0, 1], [5, 5])
    with pytest.raises(_REFUSED, match='owned by a live actor'):
      _call(newcomer, [0, 1], [6, 6])
    owner.close()
    # The server marks the stream closed as soon as gRPC tells it, well within a second.
    deadline = time.time() + 5
    while True:
      try:
        _call(newcomer, [0, 1], [6, 6])
        break
      except _REFUSED:
        assert time.time() < deadline, 'the closed owner kept its env ids'
        time.sleep(0.02)
    assert time.time() < deadline
  finally:
    owner.close()
    newcomer.close()
    learner.server.shutdown()


def test_an_owner_silent_for_the_grace_period_on_an_open_connection_is_replaced(tmp_path):
  learner = _Learner(tmp_path, grace=0.5)
  owner, newcomer = grpc.Client(learner.address), grpc.Client(learner.address)
  try:
    _call(owner, [0, 1], [5, 5])
    with pytest.raises(_REFUSED, match=r'--actor_takeover_grace_secs=0.5 \(in \d s at the '
                                       r'earliest\)'):
      _call(newcomer, [0, 1], [6, 6])
    time.sleep(0.7)  # The owner's stream is open, but it sends nothing.
    _call(newcomer, [0, 1], [6, 6])
    with pytest.raises(_REFUSED, match='owned by a live actor'):
      _call(owner, [0, 1], [5, 5])  # The old owner is the newcomer now.
  finally:
    owner.close()
    newcomer.close()
    learner.server.shutdown()


@pytest.mark.parametrize('observation, message', [
    (1e30, r'env_outputs.observation is beyond 1e\+09 in absolute value for env ids \[0, 1\] '
           r'\(the learner.s --refuse_observations_above=1e\+09; 0: no bound\)'),
    (np.nan, r'env_outputs.observation is not finite \(NaN or Inf\) for env ids \[0, 1\]'),
])
def test_extreme_observations_are_refused_naming_the_flag(tmp_path, observation, message):
  learner = _Learner(tmp_path)
  client = grpc.Client(learner.address)
  try:
    with pytest.raises(_REFUSED, match=message):
      _call(client, [0, 1], [5, 5], observation)
    _call(client, [0, 1], [5, 5], 1e8)
    assert learner.rows.tolist() == [1, 1, 0, 0]  # Only the call within bounds ran.
  finally:
    client.close()
    learner.server.shutdown()


def test_an_actor_refused_for_a_live_owner_retries_with_its_run_ids_and_takes_over(
    tmp_path, monkeypatch):
  monkeypatch.setattr(actor, 'REFUSAL_RETRY_SECS', (0.05, 0.2))
  warnings, infos = [], []
  monkeypatch.setattr(actor.logging, 'warning', lambda message, *args: warnings.append(
      message % args))
  monkeypatch.setattr(actor.logging, 'info', lambda message, *args: infos.append(message % args))
  learner = _Learner(tmp_path)
  owner = grpc.Client(learner.address)
  try:
    _call(owner, [0, 1], [5, 5])
    thread, ended = _start_actor(learner)
    deadline = time.time() + 30
    while len(learner.requests) < 4:  # The owner's call and at least 3 of the actor's.
      assert time.time() < deadline and not ended, (ended, warnings)
      time.sleep(0.02)
    assert thread.is_alive() and learner.rows.tolist() == [1, 1, 0, 0]
    # (absl's logging is the learner's too: its line about the refusals is there as well.)
    lines = [line for line in warnings if 'of actor 0' in line]
    assert len(lines) == 1, warnings  # Rate-limited: one line, not one per refusal.
    assert 'refused 1 call(s) of actor 0 for now' in lines[0]
    assert 'owned by a live actor on another connection' in lines[0]
    owner.close()
    learner.wait_for_rows(0, 10)  # The actor took over.
    learner.server.finish()
    thread.join(30)
    assert ended == [None]
  finally:
    owner.close()
    learner.server.shutdown()
  actor_run_ids = {tuple(run_ids) for _, run_ids in learner.requests[1:]}
  assert len(actor_run_ids) == 1, actor_run_ids  # The same run ids, refused or accepted.
  assert any(line.startswith('The learner at unix:') and 'accepted a call of actor 0 after'
             in line for line in infos), infos
