"""V-trace end to end over shared memory: a real learner and real actors (one of them checks that
it never imported TensorFlow) as separate processes, through the entry points with
--server_address=shm:NAME, to the end of the learner's frame budget."""

import os
import re

import pytest

from tests.processes import Processes

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'
TF_FREE_ACTOR = 'tests.agents.vtrace.tf_free_actor'


@pytest.mark.timeout(240)
def test_learner_and_actors_train_over_shared_memory_to_the_end(tmp_path):
  values = dict(server_address=f'shm:e2e{os.getpid()}', logdir=tmp_path / 'logdir', num_envs=8,
                env_batch_size=4, inference_batch_size=4, unroll_length=10, batch_size=4,
                total_environment_frames=4000, save_checkpoint_secs=10**5, seed=1)
  flags = [f'--{name}={value}' for name, value in values.items()]
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', GYM_MAIN, flags + ['--run_mode=learner'])
    trainer = processes.start('actor_0', GYM_MAIN, flags + ['--run_mode=actor', '--task=0'])
    checker = processes.start('actor_1', TF_FREE_ACTOR, flags + ['--run_mode=actor', '--task=1'])
    checker.wait_for(r'tensorflow_loaded False', timeout=120)
    # The checker stopped after its steps; another actor takes its envs to reach the budget.
    processes.start('actor_1b', GYM_MAIN, flags + ['--run_mode=actor', '--task=1'])
    assert learner.wait(180) == 0, learner.log()[-3000:]
    assert trainer.wait(60) == 0, trainer.log()[-3000:]
    assert 'finished training; this actor stops' in trainer.log()
    assert 'Inference call failed' not in trainer.log()


@pytest.mark.timeout(240)
def test_one_learner_serves_a_grpc_actor_and_a_shared_memory_actor_at_once(tmp_path):
  """The learner's --server_address lists a gRPC and a shm: address; actor 0 gets the gRPC one
  alone, actor 1 the learner's whole list (it picks shm:). Both train to the end of the frame
  budget. Actor 1's envs include the evaluation ones, so that the learner's episode lines show
  an episode of the shared-memory actor (eval) beside the training ones."""
  grpc_address, shm = f'unix:{tmp_path}/learner.sock', f'shm:both{os.getpid()}'
  values = dict(logdir=tmp_path / 'logdir', num_envs=8, env_batch_size=4, num_eval_envs=2,
                inference_batch_size=4, unroll_length=10, batch_size=2,
                total_environment_frames=4000, save_checkpoint_secs=10**5, seed=1)
  flags = [f'--{name}={value}' for name, value in values.items()]
  both = f'--server_address={grpc_address},{shm}'
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', GYM_MAIN, flags + [both, '--run_mode=learner'])
    over_grpc = processes.start('actor_0', GYM_MAIN, flags + [
        f'--server_address={grpc_address}', '--run_mode=actor', '--task=0'])
    over_shm = processes.start('actor_1', GYM_MAIN,
                               flags + [both, '--run_mode=actor', '--task=1'])
    assert learner.wait(180) == 0, learner.log()[-3000:]
    for actor in (over_grpc, over_shm):
      assert actor.wait(60) == 0, actor.log()[-3000:]
      assert 'finished training; this actor stops' in actor.log()
      assert 'Inference call failed' not in actor.log()
    assert f'Actor 0 connected to {grpc_address}; environments 0 to 3' in over_grpc.log()
    assert (f'Actor 1 connected to {shm} (of {both}: an actor on another machine needs a gRPC '
            'address alone); environments 4 to 7') in over_shm.log()
    log = learner.log()
    assert re.search(r'Env id: [0-5] \(training\)', log), log[-3000:]
    assert re.search(r'Env id: [67] \(eval\)', log), log[-3000:]
