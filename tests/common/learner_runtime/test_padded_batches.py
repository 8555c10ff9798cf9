"""One caller's rows never fail or stall a batch for the others: the learner's inference function
served over real gRPC.

The counting agent's action is the number of steps its env took since its (re)start plus 1000
times the env id, so each action shows what per-env state the row saw.
"""

import concurrent.futures
import logging
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.learner_runtime import inference
from seed_rl.common.learner_runtime import starvation
from seed_rl.common.learner_runtime import unroll_queue
from seed_rl.common.structures import EnvOutput
from tests.common.learner_runtime import test_inference

pytestmark = pytest.mark.timeout(60)

_NUM_ENVS = 9
_BATCH_SIZE = 8


@pytest.fixture
def learner(tmp_path):
  """A server of the inference function of 9 envs in batches of 8 (unrolls of 2 steps)."""
  agent = test_inference._CountingAgent(config=None)  # pylint: disable=protected-access
  agent.burn_in = 0
  agent.supports_abandoned_episodes = False
  specs = test_inference._SPECS  # pylint: disable=protected-access
  iterations = tf.Variable(0, dtype=tf.int64)
  env_states = inference.EnvStates(_NUM_ENVS, _NUM_ENVS, unroll_length=2, burn_in=0,
                                   specs=specs, iterations=iterations)
  queue = unroll_queue.UnrollQueue(-1, env_states.unroll_specs, iterations)
  stats = episodes.EpisodeStats(_NUM_ENVS)
  function = inference.create_inference_fn(agent, env_states, stats, queue, specs,
                                           _BATCH_SIZE, num_action_repeats=1, device='/cpu:0')
  address = f'unix:{tmp_path}/learner.sock'
  server = grpc.Server([address])
  server.bind(function)
  server.start()
  executor = concurrent.futures.ThreadPoolExecutor(8)
  yield types.SimpleNamespace(server=server, address=address, env_states=env_states,
                              queue=queue, pool=executor)
  executor.shutdown(wait=False)  # A failed test's calls end as the server shuts down.
  server.shutdown()
  stats.close()


def _call(client, env_ids, run_id):
  env_ids = np.array(env_ids, np.int32)
  n = len(env_ids)
  env_output = EnvOutput(np.zeros(n, np.float32), np.zeros(n, bool),
                         np.zeros([n, 1], np.float32), np.zeros(n, bool), np.zeros(n, np.int32))
  actions = client.inference(env_ids, np.full(n, run_id, np.int64), env_output,
                             np.zeros(n, np.float32))
  return np.asarray(actions).tolist()


def _submit_in_order(learner, calls):
  """Submits `(client, env_ids, run_id)` calls one after the other, each once the server holds
  the rows of the ones before (so their order in the batch is known); their futures."""
  futures, rows = [], 0
  for client, env_ids, run_id in calls:
    futures.append(learner.pool.submit(_call, client, env_ids, run_id))
    rows += len(env_ids)
    rows = 0 if rows == _BATCH_SIZE else rows  # The batch ran.
    deadline = time.time() + 20
    while rows and not any(p.rows + p.queued_rows == rows
                           for p in learner.server.pending_batches()):
      assert time.time() < deadline, f'{rows} rows never waited'
      time.sleep(0.005)
  return futures


def test_two_new_runs_of_the_same_env_ids_in_one_batch_do_not_fail_it(learner):
  clients = [grpc.Client(learner.address, timeout=30) for _ in range(3)]
  try:
    # A newcomer with other run ids for envs 0-1 joins the batch of their actor's first call.
    first, later, other = _submit_in_order(learner, [(clients[0], [0, 1], 5),
                                                     (clients[1], [0, 1], 6),
                                                     (clients[2], [2, 3, 4, 5], 7)])
    assert other.result(20) == [2001, 3001, 4001, 5001]  # The others get their actions.
    assert later.result(20) == [1, 1001]  # The later run of envs 0-1 is kept ...
    assert first.result(20) == [0, 0]  # ... and the earlier one's rows are dropped.
    run_ids = learner.env_states.run_ids.read(tf.range(6)).numpy().tolist()
    assert run_ids == [6, 6, 7, 7, 7, 7]
  finally:
    for client in clients:
      client.close()


def test_a_starved_batch_runs_padded_and_the_padding_never_reaches_env_state(learner, caplog):
  caplog.set_level(logging.INFO, logger='absl')
  config = types.SimpleNamespace(num_envs=_NUM_ENVS, env_batch_size=4)
  watch = starvation.StarvationWatch(learner.server, config, starving_after_secs=0.2)
  actors = [grpc.Client(learner.address, timeout=30) for _ in range(3)]
  try:
    # Actors of envs 0-3 and 4-7 and one stray call for env 8: 5 rows wait for 3 that never
    # come, and the second actor's 4 rows wait for the next batch.
    first, stray, second = _submit_in_order(learner, [(actors[0], [0, 1, 2, 3], 5),
                                                      (actors[1], [8], 9),
                                                      (actors[2], [4, 5, 6, 7], 6)])
    deadline = time.time() + 20
    while (message := watch.check()) is None:
      assert time.time() < deadline, 'the starved batch was not run'
      time.sleep(0.02)
    assert 'ran padded with 3 rows' in message and 'wait for the next batch' in message
    assert first.result(20) == [1, 1001, 2001, 3001]
    assert stray.result(20) == [8001]
    # The second actor's rows are in the next batch, which the first actor's next call fills.
    assert _call(actors[0], [0, 1, 2, 3], 5) == [2, 1002, 2002, 3002]
    assert second.result(20) == [4001, 5001, 6001, 7001]
    # Full batches again: the watch says so.
    assert _submit_in_order(learner, [(actors[0], [0, 1, 2, 3], 5),
                                      (actors[2], [4, 5, 6, 7], 6)])[1].result(20) == [
                                          4002, 5002, 6002, 7002]
    deadline = time.time() + 20
    while not any('fill again' in r.getMessage() for r in caplog.records):
      assert time.time() < deadline, 'no line saying that batches fill again'
      assert watch.check() is None
      time.sleep(0.02)
    # Per-env state saw the real rows only: 3 steps of envs 0-3 (one full unroll each), 2 of
    # envs 4-7, 1 of env 8.
    run_ids = learner.env_states.run_ids.read(tf.range(_NUM_ENVS)).numpy().tolist()
    assert run_ids == [5] * 4 + [6] * 4 + [9]
    unrolls = learner.queue.dequeue_many(int(learner.queue.size()))
    np.testing.assert_array_equal(unrolls.agent_outputs.action,
                                  [[1 + 1000 * i, 2 + 1000 * i, 3 + 1000 * i] for i in range(4)])
  finally:
    for actor in actors:
      actor.close()
