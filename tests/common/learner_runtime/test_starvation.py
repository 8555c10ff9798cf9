"""Tests of the starvation warning: an inference batch that never fills is named, once."""

import concurrent.futures
import logging
import shutil
import tempfile
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from seed_rl import grpc
from seed_rl.common.learner_runtime import starvation

pytestmark = pytest.mark.timeout(60)


def test_format_ids_joins_runs_of_ids():
  assert starvation.format_ids([9, 0, 1, 2, 3, 6, 8]) == '0-3, 6, 8-9'
  assert starvation.format_ids([]) == ''


def test_the_message_names_the_numbers_and_what_to_change():
  message = starvation.starvation_message(batch_size=4, rows=2, callers=2, env_ids=[0, 1],
                                          waiting_secs=12.3, num_envs=4, env_batch_size=1)
  assert message.startswith('Inference starved for 12 s: a batch runs only with '
                            '--inference_batch_size=4 rows, and only 2 arrived (env ids 0-1, '
                            'from 2 actor calls)')
  assert 'With --num_envs=4, env ids 2-3 did not call: start their actors (tasks 2-3 with ' \
         '--env_batch_size=1)' in message
  assert '(--num_envs=2 for the 2 actors of 1 env that called)' in message
  assert 'a smaller --inference_batch_size (at most 2 here' in message


def test_when_every_env_called_the_batch_size_must_fit_the_calls():
  message = starvation.starvation_message(batch_size=6, rows=4, callers=1, env_ids=[0, 1, 2, 3],
                                          waiting_secs=10, num_envs=4, env_batch_size=4)
  assert 'Every env id called' in message
  assert 'an --inference_batch_size of at most 4 made of whole calls of --env_batch_size=4' \
         in message


@tf.function(input_signature=[tf.TensorSpec([4], tf.int32)])
def inference(env_ids):
  return env_ids * 10


@pytest.fixture
def server():
  directory = tempfile.mkdtemp(prefix='starve', dir='/tmp')
  address = f'unix:{directory}/learner.sock'
  running = grpc.Server([address])
  running.bind(inference)
  running.start()
  yield running, address
  running.shutdown()
  shutil.rmtree(directory, ignore_errors=True)


def _wait_for_check(watch, timeout=20):
  """Checks every 50 ms until a check returns a warning; the checks' results."""
  deadline = time.time() + timeout
  results = [watch.check()]
  while results[-1] is None:
    assert time.time() < deadline, 'no starvation warning'
    time.sleep(0.05)
    results.append(watch.check())
  return results


def test_a_starved_batch_runs_padded_is_reported_once_and_its_end_too(server, caplog):
  caplog.set_level(logging.INFO, logger='absl')  # Whatever verbosity earlier tests left.
  running, address = server
  config = types.SimpleNamespace(num_envs=4, env_batch_size=1)
  watch = starvation.StarvationWatch(running, config, starving_after_secs=0.3, repeat_secs=600)
  clients = [grpc.Client(address, timeout=30) for _ in range(4)]
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    try:
      waiting = [pool.submit(clients[i].inference, np.int32(i)) for i in (0, 1)]
      message = _wait_for_check(watch)[-1]
      assert ('only 2 arrived (env ids 0-1, from 2 actor calls); it ran padded with 2 rows' in
              message and 'env ids 2-3 did not call' in message)
      # The callers got their outputs from the padded run.
      assert [w.result(20) for w in waiting] == [0, 10]
      # The same starvation again: it runs padded again, without another warning, and the
      # batches do not count as filling again.
      waiting = [pool.submit(clients[i].inference, np.int32(i)) for i in (0, 1)]
      deadline = time.time() + 20
      while not all(w.done() for w in waiting):
        assert time.time() < deadline, 'the starved batch did not run padded again'
        assert watch.check() is None
        time.sleep(0.05)
      assert [w.result() for w in waiting] == [0, 10]
      records = [r.getMessage() for r in caplog.records]
      assert sum('Inference starved' in r for r in records) == 1
      assert not any('Inference batches fill again' in r for r in records)

      waiting = [pool.submit(clients[i].inference, np.int32(i)) for i in range(4)]
      assert [w.result(20) for w in waiting] == [0, 10, 20, 30]
      deadline = time.time() + 20
      while not any('Inference batches fill again' in r.getMessage() for r in caplog.records):
        assert time.time() < deadline, 'no line saying that batches fill again'
        assert watch.check() is None
        time.sleep(0.05)
    finally:
      for client in clients:
        client.close()


def test_the_message_names_the_calls_waiting_for_the_next_batch():
  message = starvation.starvation_message(
      batch_size=8, rows=5, callers=2, env_ids=[0, 1, 2, 3, 8], waiting_secs=10, num_envs=9,
      env_batch_size=4, queued_rows=4, queued_callers=1, queued_env_ids=[4, 5, 6, 7],
      padded=True)
  assert message.startswith(
      'Inference starved for 10 s: a batch runs only with --inference_batch_size=8 rows, and '
      'only 5 arrived (env ids 0-3, 8, from 2 actor calls), while 4 more rows (env ids 4-7, 1 '
      'call) did not fit into its 3 free rows and wait for the next batch; it ran padded with 3 '
      'rows that the learner drops')
  assert 'Every env id called' in message
