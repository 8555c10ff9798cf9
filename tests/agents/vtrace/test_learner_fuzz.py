"""Mutated requests against a live learner while a good actor trains: nothing they send may stop
the learner, poison the model or break the good actor's training."""

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from seed_rl import grpc
from seed_rl.common.structures import EnvOutput
from seed_rl.grpc import errors
from tests.processes import Processes, frames_progress

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'
ROWS = 4

_specials = st.sampled_from([1e30, -1e30, 3.4e38, np.nan, np.inf, -np.inf])
_bad_env_ids = st.sampled_from([8, -1, 1000, 2**31 - 1])


@st.composite
def _requests(draw):
  """A valid request of env ids 4 to 7 (the good actor has 0 to 3), then 0 to 3 mutations:
  special values (huge but finite, NaN, Inf) in rewards or observations, env ids outside the
  learner or repeated, abandoned flags."""
  request = {
      'env_ids': draw(st.permutations([4, 5, 6, 7])),
      'run_ids': [draw(st.integers(-2**63, 2**63 - 1))] * ROWS,
      'reward': draw(st.lists(st.floats(-10, 10), min_size=ROWS, max_size=ROWS)),
      'done': draw(st.lists(st.booleans(), min_size=ROWS, max_size=ROWS)),
      'observation': draw(st.lists(st.floats(-10, 10), min_size=4 * ROWS, max_size=4 * ROWS)),
      'abandoned': [False] * ROWS,
      'episode_step': draw(st.lists(st.integers(0, 2**31 - 1), min_size=ROWS, max_size=ROWS)),
  }
  for _ in range(draw(st.integers(0, 3))):
    field = draw(st.sampled_from(['reward', 'observation', 'env_ids', 'duplicate', 'abandoned']))
    if field == 'env_ids':
      request['env_ids'][draw(st.integers(0, ROWS - 1))] = draw(_bad_env_ids)
    elif field == 'duplicate':
      request['env_ids'][1] = request['env_ids'][0]
    elif field == 'abandoned':
      request['abandoned'][draw(st.integers(0, ROWS - 1))] = True
    else:
      request[field][draw(st.integers(0, len(request[field]) - 1))] = draw(_specials)
  return request


def _flags(tmp_path):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=8, env_batch_size=4, inference_batch_size=4, unroll_length=10,
                batch_size=4, total_environment_frames=10**7, save_checkpoint_secs=10**5,
                seed=1)
  return [f'--{name}={value}' for name, value in values.items()]


def _send(client, request) -> str:
  """One mutated request: it is served with valid actions or refused with INVALID_ARGUMENT."""
  env_output = EnvOutput(np.array(request['reward'], np.float32),
                         np.array(request['done']),
                         np.array(request['observation'], np.float32).reshape(ROWS, 4),
                         np.array(request['abandoned']),
                         np.array(request['episode_step'], np.int32))
  try:
    actions = client.inference(np.array(request['env_ids'], np.int32),
                               np.array(request['run_ids'], np.int64), env_output,
                               np.array(request['reward'], np.float32))
  except errors.error_classes(errors.INVALID_ARGUMENT):
    return 'refused'
  assert np.all((actions == 0) | (actions == 1)), actions
  return 'served'


@pytest.mark.timeout(420)
def test_mutated_requests_never_stop_the_learner_or_the_good_actor(tmp_path):
  flags = _flags(tmp_path)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', GYM_MAIN, flags + ['--run_mode=learner'])
    actor = processes.start('actor_0', GYM_MAIN, flags + ['--run_mode=actor', '--task=0'])
    learner.wait_for(r'Progress: \d+/', timeout=120)
    frames_before = frames_progress(learner)
    client = grpc.Client(f'unix:{tmp_path}/learner.sock', timeout=60)
    outcomes = []

    @settings(max_examples=300, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(_requests())
    def fuzz(request):
      outcomes.append(_send(client, request))
      assert learner.popen.poll() is None, learner.log()[-3000:]

    try:
      fuzz()  # pylint: disable=no-value-for-parameter
    finally:
      client.close()
    # Both kinds happened: requests the door refused, and odd but valid ones that were served
    # (values of huge magnitude, run ids that change every call).
    assert outcomes.count('served') >= 10 and outcomes.count('refused') >= 10, outcomes
    # The good actor kept training throughout, and goes on.
    deadline = time.time() + 60
    while frames_progress(learner) < frames_before + 4000:
      assert learner.popen.poll() is None and actor.popen.poll() is None, learner.log()[-3000:]
      assert time.time() < deadline, 'training stopped after the fuzzing'
      time.sleep(0.5)
    assert 'Inference call failed' not in actor.log()
    assert 'nan' not in ' '.join(learner.log().split('Return:')[-20:]).lower()
