"""An actor process outlives a learner that stops (a preemption) and ends with one that finishes
training: real learner and actor processes over gRPC."""

import re
import signal
import time

import pytest

from tests.processes import Processes

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'
# One actor of 4 environments; training steps of 4 unrolls of 10 steps.
FRAMES_PER_ITERATION = 4 * 10


def _flags(tmp_path):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=4, env_batch_size=4, inference_batch_size=4, unroll_length=10,
                batch_size=4, total_environment_frames=10**7, save_checkpoint_secs=10**5,
                mlp_sizes=16, seed=1)
  return [f'--{name}={value}' for name, value in values.items()]


@pytest.mark.timeout(300)
def test_an_actor_outlives_a_stopped_learner_and_stops_when_training_finishes(tmp_path):
  flags = _flags(tmp_path)
  with Processes(tmp_path) as processes:
    first = processes.start('learner_1', GYM_MAIN, flags + ['--run_mode=learner'])
    actor = processes.start('actor_0', GYM_MAIN, flags + ['--run_mode=actor', '--task=0'])
    first.wait_for(r'Progress: \d+/', timeout=120)
    first.signal(signal.SIGTERM)  # A preemption: the actor must wait for the next learner.
    assert first.wait(60) == 0, first.log()[-3000:]
    iteration = int(re.search(r'Training finished at iteration (\d+) .*stopped with',
                              first.log()).group(1))
    actor.wait_for('Inference call failed', timeout=30)
    time.sleep(1)
    assert actor.popen.poll() is None, actor.log()[-3000:]

    # The restarted learner has 3 iterations left of its budget.
    budget = (iteration + 3) * FRAMES_PER_ITERATION
    second = processes.start('learner_2', GYM_MAIN, flags + [
        '--run_mode=learner', f'--total_environment_frames={budget}'])
    actor.wait_for(r'Actor 0 connected', timeout=120, count=2)
    second.wait_for(rf'Training finished at iteration {iteration + 3} .*the frame budget is '
                    'spent', timeout=120)
    assert actor.wait(10) == 0, actor.log()[-3000:]
    assert (f'The learner at unix:{tmp_path}/learner.sock finished training; this actor '
            'stops.') in actor.log()
    assert second.wait(60) == 0, second.log()[-3000:]
    assert 'Traceback' not in actor.log()
