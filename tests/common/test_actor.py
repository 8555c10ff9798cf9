"""The actor loop against a real gRPC server: what it retries and what stops it."""

import re
import threading
import time
import types

import gymnasium
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common import actor
from seed_rl.common import specs

pytestmark = pytest.mark.timeout(120)


def _config(tmp_path, **overrides):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', task=0, env_batch_size=2,
                render=False, seed=None, double_buffered_acting=False, grpc_token_file=None,
                grpc_tls_ca_file=None)
  values.update(overrides)
  return types.SimpleNamespace(**values)


def _serve(tmp_path, inference):
  server = grpc.Server([f'unix:{tmp_path}/learner.sock'])
  server.bind(inference)
  server.start()
  return server


def _signature(batch_size):
  space = gymnasium.make('CartPole-v1').observation_space
  return specs.inference_input_specs(batch_size, specs.env_output_specs_for(space))


def _cartpole(env_id, config):
  del env_id, config
  return gymnasium.make('CartPole-v1')


def test_a_refused_call_stops_the_actor_with_the_learner_s_message(tmp_path):

  @tf.function(input_signature=_signature(2))
  def inference(env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    tf.debugging.assert_less(env_ids, 0, message='env ids outside [0, 0)')
    return tf.zeros([2], tf.int64)

  server = _serve(tmp_path, inference)
  try:
    with pytest.raises(actor.FatalActorError,
                       match=r'refused the calls of actor 0: .*env ids outside \[0, 0\)'):
      actor.actor_loop(_cartpole, _config(tmp_path), max_steps=5)
  finally:
    server.shutdown()


def test_an_invalid_action_stops_the_actor_naming_the_environment(tmp_path):

  @tf.function(input_signature=_signature(2))
  def inference(unused_env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    return tf.constant([0, 2], tf.int64)  # CartPole has actions 0 and 1.

  server = _serve(tmp_path, inference)
  try:
    with pytest.raises(actor.FatalActorError, match='action 2 for environment 1, which is not'):
      actor.actor_loop(_cartpole, _config(tmp_path), max_steps=5)
  finally:
    server.shutdown()


class _RecordingEnv(gymnasium.Wrapper):
  """A real CartPole that records the actions it is stepped with into `actions`."""

  def __init__(self, actions: list):
    super().__init__(gymnasium.make('CartPole-v1'))
    self._actions = actions

  def step(self, action):
    self._actions.append(int(action))
    return self.env.step(action)


def test_valid_actions_run_the_requested_steps(tmp_path):
  calls = []  # The env ids of each inference call the learner received.

  def record(env_ids):
    calls.append(env_ids.numpy().tolist())
    return 0

  @tf.function(input_signature=_signature(2))
  def inference(env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    tf.py_function(record, [env_ids], tf.int32)
    return tf.constant([0, 1], tf.int64)

  actions = {0: [], 1: []}  # Env id -> the actions its env was stepped with.
  server = _serve(tmp_path, inference)
  try:
    actor.actor_loop(lambda env_id, config: _RecordingEnv(actions[env_id]), _config(tmp_path),
                     max_steps=5)
  finally:
    server.shutdown()
  assert calls == [[0, 1]] * 5
  assert actions == {0: [0] * 5, 1: [1] * 5}


def test_a_time_limit_reaches_the_learner_as_abandoned_and_a_terminal_state_does_not(tmp_path):
  seen = []  # (env id, done, abandoned) of every row the learner received.

  def record(env_ids, done, abandoned):
    seen.extend(zip(env_ids.numpy().tolist(), done.numpy().tolist(),
                    abandoned.numpy().tolist()))
    return 0

  @tf.function(input_signature=_signature(2))
  def inference(env_ids, unused_run_ids, env_outputs, unused_raw_rewards):
    tf.py_function(record, [env_ids, env_outputs.done, env_outputs.abandoned], tf.int32)
    return tf.constant([0, 1], tf.int64)  # Env 1 pushes its pole over in about 10 steps.

  def create_env(env_id, config):
    del config  # Env 0 is cut after 3 steps, before its pole can fall.
    return gymnasium.make('CartPole-v1', max_episode_steps=3 if env_id == 0 else 500)

  server = _serve(tmp_path, inference)
  try:
    actor.actor_loop(create_env, _config(tmp_path), max_steps=25)
  finally:
    server.shutdown()
  ends = {env_id: [abandoned for i, done, abandoned in seen if i == env_id and done]
          for env_id in (0, 1)}
  assert len(ends[0]) >= 5 and all(ends[0]), seen
  assert ends[1] and not any(ends[1]), seen
  assert not any(abandoned for _, done, abandoned in seen if not done), seen


@pytest.mark.parametrize('inference_batch_size', [2, 4])
def test_double_buffered_acting_sends_each_half_in_its_own_call(tmp_path, inference_batch_size):
  calls = []  # The env ids of each call's rows, in the order the learner received them.

  def record(env_ids, run_ids, episode_step):
    calls.append(env_ids.numpy().tolist())
    # Each env's episode step counts its own steps: every call carries its half's state.
    for env_id, step in zip(env_ids.numpy(), episode_step.numpy()):
      steps.setdefault(int(env_id), []).append(int(step))
    runs.update(zip(env_ids.numpy().tolist(), run_ids.numpy().tolist()))
    return 0

  steps, runs = {}, {}

  # A batch of 2 rows is one half's call; a batch of 4 needs both halves' calls at once (they
  # are in flight together).
  @tf.function(input_signature=_signature(inference_batch_size))
  def inference(env_ids, run_ids, env_outputs, unused_raw_rewards):
    tf.py_function(record, [env_ids, run_ids, env_outputs.episode_step], tf.int32)
    return tf.ones([inference_batch_size], tf.int64)

  server = _serve(tmp_path, inference)
  try:
    actor.actor_loop(_cartpole, _config(tmp_path, env_batch_size=4, double_buffered_acting=True),
                     max_steps=6)
  finally:
    server.shutdown()
  halves = [sorted(call) for call in calls]
  if inference_batch_size == 2:
    assert all(half in ([0, 1], [2, 3]) for half in halves), calls
  # Every env made 6 calls, each with the episode step of its own half (the 7th calls, in
  # flight when the actor stops, may be cancelled).
  assert sorted(steps) == [0, 1, 2, 3]
  for env_steps in steps.values():
    assert env_steps[:6] == [0, 1, 2, 3, 4, 5], steps
  assert len(set(runs.values())) == 4


def test_double_buffered_acting_refuses_an_odd_env_batch_size(tmp_path):

  @tf.function(input_signature=_signature(3))
  def inference(unused_env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    return tf.zeros([3], tf.int64)

  server = _serve(tmp_path, inference)
  try:
    with pytest.raises(actor.FatalActorError, match='--env_batch_size must be even, got 3'):
      actor.actor_loop(_cartpole, _config(tmp_path, env_batch_size=3,
                                          double_buffered_acting=True), max_steps=5)
  finally:
    server.shutdown()


@pytest.mark.parametrize('address, message', [
    ('localhost', 'is not host:port'),
    ('localhost:99999', 'is not host:port'),
    ('unix:', 'names no socket path'),
    ('no-such-host.invalid:8686', "cannot resolve the host 'no-such-host.invalid'"),
])
def test_an_address_that_cannot_work_stops_the_actor_at_once(tmp_path, address, message):
  config = _config(tmp_path)
  config.server_address = address
  with pytest.raises(actor.FatalActorError, match=message):
    actor.actor_loop(_cartpole, config, max_steps=1)


def test_an_actor_waiting_for_its_learner_says_so_and_connects_when_it_comes(
    tmp_path, monkeypatch):
  monkeypatch.setattr(actor, 'CONNECT_LOG_PERIOD', 0.5)
  warnings = []
  monkeypatch.setattr(actor.logging, 'warning', lambda message, *args: warnings.append(
      message % args))

  @tf.function(input_signature=_signature(2))
  def inference(unused_env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    return tf.constant([0, 1], tf.int64)

  result = []
  acting = threading.Thread(
      target=lambda: result.append(actor.actor_loop(_cartpole, _config(tmp_path), max_steps=3)))
  acting.start()
  time.sleep(1.5)
  assert any(re.fullmatch(r'No learner at unix:.* for \d s; is it running\?', line)
             for line in warnings), warnings
  server = _serve(tmp_path, inference)
  try:
    acting.join(60)
    assert not acting.is_alive() and result == [None]
  finally:
    server.shutdown()


@pytest.mark.parametrize('double_buffered', [False, True])
def test_an_actor_reconnects_after_its_learner_went_away_and_stops_when_training_finished(
    tmp_path, monkeypatch, double_buffered):
  lines = []
  monkeypatch.setattr(actor.logging, 'info', lambda message, *args: lines.append(message % args))
  calls = []

  @tf.function(input_signature=_signature(2))
  def inference(unused_env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    tf.py_function(lambda: calls.append(1) or 0, [], tf.int32)
    return tf.constant([0, 1], tf.int64)

  def wait_for_calls(count):
    deadline = time.time() + 30
    while len(calls) < count:
      assert time.time() < deadline, lines
      time.sleep(0.05)

  # Double-buffered: two halves of 2 environments, each in its own calls of 2 rows.
  config = _config(tmp_path, env_batch_size=4 if double_buffered else 2,
                   double_buffered_acting=double_buffered)
  acting = threading.Thread(target=actor.actor_loop, args=(_cartpole, config), daemon=True)
  acting.start()
  server = _serve(tmp_path, inference)
  try:
    wait_for_calls(3)
  finally:
    server.shutdown()  # As a learner stopped by SIGTERM (a preemption) does.
  time.sleep(1.5)
  assert acting.is_alive(), lines
  assert any(line.startswith('Inference call failed') for line in lines), lines
  server = _serve(tmp_path, inference)  # The restarted learner.
  try:
    wait_for_calls(len(calls) + 3)
    assert len([line for line in lines if line.startswith('Actor 0 connected')]) == 2, lines
    server.finish()  # As a learner that spent its frame budget does.
    acting.join(10)
    assert not acting.is_alive()
  finally:
    server.shutdown()
  assert lines[-1] == (f'The learner at unix:{tmp_path}/learner.sock finished training; this '
                       'actor stops.'), lines


def _size_of_request(tmp_path, inference):
  """The bytes of one request of the actor of `_config(tmp_path)`, as a server refusing every
  request (limit of 1 byte) names them; that refusal, which no retry can pass, ends the actor."""
  server = grpc.Server([f'unix:{tmp_path}/learner.sock'], max_bytes_in_flight=1)
  server.bind(inference)
  server.start()
  try:
    with pytest.raises(actor.FatalActorError,
                       match=r'refused the calls of actor 0: Request of \d+ bytes refused: it '
                             r'is larger than the server.s limit') as refusal:
      actor.actor_loop(_cartpole, _config(tmp_path), max_steps=3)
  finally:
    server.shutdown()
  return int(re.search(r'Request of (\d+) bytes', str(refusal.value)).group(1))


def test_a_call_refused_while_the_server_holds_its_bytes_in_flight_is_sent_again(
    tmp_path, monkeypatch):
  monkeypatch.setattr(actor, 'REFUSAL_RETRY_SECS', (0.05, 0.2))
  warnings = []
  monkeypatch.setattr(actor.logging, 'warning', lambda message, *args: warnings.append(
      message % args))
  executing, released = threading.Event(), threading.Event()

  def hold():  # The first batch runs until the test releases it.
    if not executing.is_set():
      executing.set()
      released.wait(30)
    return 0

  @tf.function(input_signature=_signature(2))
  def inference(unused_env_ids, unused_run_ids, unused_env_outputs, unused_raw_rewards):
    tf.py_function(hold, [], tf.int32)
    return tf.constant([0, 1], tf.int64)

  size = _size_of_request(tmp_path, inference)
  # Room for one request in flight, not two: the second actor's first call is refused while the
  # first actor's call runs.
  server = grpc.Server([f'unix:{tmp_path}/learner.sock'], max_bytes_in_flight=size + size // 2)
  server.bind(inference)
  server.start()
  results = []
  actors = [threading.Thread(target=lambda task=task: results.append(actor.actor_loop(
      _cartpole, _config(tmp_path, task=task), max_steps=3)), daemon=True) for task in (0, 1)]
  try:
    actors[0].start()
    assert executing.wait(30)
    actors[1].start()
    deadline = time.time() + 30
    while not any('of actor 1' in line for line in warnings):
      assert time.time() < deadline and actors[1].is_alive(), warnings
      time.sleep(0.02)
    released.set()
    for thread in actors:
      thread.join(30)
    assert results == [None, None], warnings
  finally:
    released.set()
    server.shutdown()
  line, = [line for line in warnings if 'of actor 1' in line]
  assert 'refused 1 call(s) of actor 1 for now' in line and 'retry later' in line, line


@pytest.mark.parametrize('address,accepted', [('shm:learner', True), ('shm:a/b', False),
                                              ('shm:', False)])
def test_shared_memory_addresses_are_checked_by_name(address, accepted):
  if accepted:
    actor.check_server_address(address)
  else:
    with pytest.raises(actor.FatalActorError, match='not a shared-memory address'):
      actor.check_server_address(address)


def test_an_actor_given_the_learners_list_connects_through_its_shared_memory_address():
  assert actor.actor_address('localhost:8686,shm:run1') == 'shm:run1'
  assert actor.actor_address('localhost:8686') == 'localhost:8686'
  with pytest.raises(actor.FatalActorError, match='has an empty item'):
    actor.actor_address('localhost:8686,')
  with pytest.raises(actor.FatalActorError, match='not a shared-memory address'):
    actor.actor_address('localhost:8686,shm:a/b')
