"""A live learner refuses bad callers one by one and keeps training with the good actors."""

import re
import threading
import time

import numpy as np
import pytest

from seed_rl import grpc
from seed_rl.common.structures import EnvOutput
from seed_rl.grpc import errors
from tests.processes import Processes, frames_progress

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'


def _flags(tmp_path, num_envs=8):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=num_envs, env_batch_size=4, inference_batch_size=8, unroll_length=10,
                batch_size=4, total_environment_frames=10**7, save_checkpoint_secs=10**5,
                seed=1)
  return [f'--{name}={value}' for name, value in values.items()]


def _training_goes_on(learner, frames=2000, timeout=60):
  start = frames_progress(learner)
  deadline = time.time() + timeout
  while frames_progress(learner) < start + frames:
    assert learner.popen.poll() is None, learner.log()[-3000:]
    assert time.time() < deadline, 'training stopped'
    time.sleep(0.5)


def _nan_request(server_address):
  client = grpc.Client(server_address)
  env_output = EnvOutput(np.full(4, np.nan, np.float32), np.zeros(4, bool),
                         np.zeros([4, 4], np.float32), np.zeros(4, bool), np.zeros(4, np.int32))
  try:
    # The client raises TensorFlow's error class when TensorFlow is loaded, seed_rl's otherwise.
    with pytest.raises(errors.error_classes(errors.INVALID_ARGUMENT),
                       match=r'reward is not finite .* \[0, 1, 2, 3\]'):
      client.inference(np.arange(4, dtype=np.int32), np.ones(4, np.int64), env_output,
                       np.zeros(4, np.float32))
  finally:
    client.close()


@pytest.mark.timeout(300)
def test_bad_callers_are_refused_alone_and_training_continues(tmp_path):
  flags = _flags(tmp_path)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', GYM_MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', GYM_MAIN,
                              flags + ['--run_mode=actor', f'--task={task}']) for task in (0, 1)]
    learner.wait_for(r'Progress: \d+/', timeout=120)

    # An actor whose env ids the learner does not have stops with the reason, in one line.
    outsider = processes.start('actor_2', GYM_MAIN, flags + ['--run_mode=actor', '--task=2'])
    assert outsider.wait(90) != 0
    assert re.search(r'seed_rl actor: The learner at .* refused the calls of actor 2: env ids '
                     r'\[8, 9, 10, 11\] are outside the learner.s \[0, 8\)', outsider.log())
    assert 'Traceback' not in outsider.log()
    _training_goes_on(learner)

    # NaN rewards are refused at the door and never reach the model.
    _nan_request(f'unix:{tmp_path}/learner.sock')
    _training_goes_on(learner)

    # A second actor with --task=0 is refused while the first lives, and takes over once it died.
    duplicate = processes.start('actor_0_duplicate', GYM_MAIN,
                                flags + ['--run_mode=actor', '--task=0'])
    duplicate.wait_for(r'refused 1 call\(s\) of actor 0 for now; .* are owned by a live actor on '
                       r'another connection', timeout=90)
    assert 'is another actor running with the same --task?' in learner.log()
    _training_goes_on(learner)
    assert actors[0].popen.poll() is None, actors[0].log()[-3000:]
    actors[0].kill()
    duplicate.wait_for(r'accepted a call of actor 0 after \d+ refusals', timeout=60)
    _training_goes_on(learner)
    assert 'Inference call failed' not in actors[1].log()


def _repeat_requests(server_address, failures, calls=40):
  client = grpc.Client(server_address)
  env_output = EnvOutput(np.zeros(4, np.float32), np.zeros(4, bool),
                         np.zeros([4, 4], np.float32), np.zeros(4, bool), np.zeros(4, np.int32))
  try:
    for _ in range(calls):
      actions = client.inference(np.arange(8, 12, dtype=np.int32), np.full(4, 7, np.int64),
                                 env_output, np.zeros(4, np.float32))
      assert np.all((actions == 0) | (actions == 1))
  except Exception as e:  # pylint: disable=broad-except
    failures.append(e)
  finally:
    client.close()


@pytest.mark.timeout(300)
def test_eight_identical_callers_sharing_batches_with_an_actor_fail_nobody(tmp_path):
  flags = _flags(tmp_path, num_envs=12)  # Actors 0 and 1, and env ids 8 to 11 for the callers.
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', GYM_MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', GYM_MAIN,
                              flags + ['--run_mode=actor', f'--task={task}']) for task in (0, 1)]
    learner.wait_for(r'Progress: \d+/', timeout=120)
    failures = []
    callers = [threading.Thread(target=_repeat_requests,
                                args=(f'unix:{tmp_path}/learner.sock', failures))
               for _ in range(8)]
    for caller in callers:
      caller.start()
    for caller in callers:
      caller.join(120)
    assert not failures, failures[0]
    _training_goes_on(learner, frames=1000)
    for actor in actors:
      assert actor.popen.poll() is None and 'Inference call failed' not in actor.log()
    assert 'Dropping repeated rows of environment ids' in learner.log()
