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


def test_a_batch_that_does_not_fill_is_reported_once_and_its_end_too(server, caplog):
  caplog.set_level(logging.INFO, logger='absl')  # Whatever verbosity earlier tests left.
  running, address = server
  config = types.SimpleNamespace(num_envs=4, env_batch_size=1)
  watch = starvation.StarvationWatch(running, config, starving_after_secs=0.3, repeat_secs=600)
  clients = [grpc.Client(address, timeout=30) for _ in range(4)]
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    try:
      waiting = [pool.submit(clients[i].inference, np.int32(i)) for i in (0, 1)]
      assert watch.check() is None  # Not waited long enough yet.
      deadline = time.time() + 20
      message = None
      while message is None:
        assert time.time() < deadline, 'no starvation warning'
        time.sleep(0.05)
        message = watch.check()
      assert ('only 2 arrived (env ids 0-1, from 2 actor calls)' in message and
              'env ids 2-3 did not call' in message)
      assert watch.check() is None  # The same starvation is not reported again.
      assert sum('Inference starved' in r.getMessage() for r in caplog.records) == 1

      waiting += [pool.submit(clients[i].inference, np.int32(i)) for i in (2, 3)]
      assert [w.result(20) for w in waiting] == [0, 10, 20, 30]
      assert watch.check() is None
      assert any('Inference batches fill again' in r.getMessage() for r in caplog.records)
    finally:
      for client in clients:
        client.close()
