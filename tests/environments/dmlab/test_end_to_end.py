"""V-trace on DeepMind Lab end to end: a real learner and 2 real actors on the fake engine."""

import os
import re

import pytest

from tests.environments.dmlab.conftest import FAKE_DIR
from tests.processes import ROOT, Processes, episode_returns

MAIN = 'seed_rl.environments.dmlab.vtrace_main'


def _uses_tensorflow(pid: int) -> bool:
  """Whether a TensorFlow library is mapped into the process."""
  with open(f'/proc/{pid}/maps') as f:
    return 'tensorflow' in f.read()


@pytest.mark.timeout(240)
def test_vtrace_trains_on_the_fake_engine_with_tf_free_actors(tmp_path):
  frames_per_iteration = 2 * 5 * 4  # batch_size x unroll_length x num_action_repeats
  iterations = 12
  flags = [f'--server_address=unix:{tmp_path}/learner.sock', f'--logdir={tmp_path}/logdir',
           '--unroll_length=5', '--batch_size=2', '--num_envs=4', '--env_batch_size=2',
           f'--total_environment_frames={frames_per_iteration * iterations}',
           '--save_checkpoint_secs=100000', f'--level_cache_dir={tmp_path}/level_cache']
  # Episodes of 48 frames (12 agent steps), so several end during the run.
  env = {'PYTHONPATH': os.pathsep.join([str(FAKE_DIR), str(ROOT)]),
         'FAKE_DMLAB_EPISODE_FRAMES': '48'}
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', MAIN, flags + ['--run_mode=learner'], env)
    actors = [processes.start(f'actor_{task}', MAIN,
                              flags + ['--run_mode=actor', f'--task={task}'], env)
              for task in (0, 1)]
    for actor in actors:
      actor.wait_for(r'Actor \d connected', timeout=120)
    learner.wait_for(r'Progress: \d+/', timeout=120)
    assert not any(_uses_tensorflow(actor.popen.pid) for actor in actors)
    assert learner.wait(120) == 0, learner.log()[-3000:]
    log = learner.log()
    assert f'Training finished at iteration {iterations}' in log
    # The learner saw DMLab's 9 actions and 72x96 RGB frames, and whole episodes.
    assert 'Traceback' not in log
    assert episode_returns(learner), log[-3000:]
    for actor in actors:
      assert 'Traceback' not in actor.log()
  cached = [name for _, _, names in os.walk(tmp_path / 'level_cache') for name in names]
  assert cached and not [name for name in cached if '.tmp-' in name]
  assert re.search(r'Creating environment: explore_goal_locations_small', actors[0].log())
