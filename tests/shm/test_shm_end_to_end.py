"""V-trace end to end over shared memory: a real learner and real actors (one of them checks that
it never imported TensorFlow) as separate processes, through the entry points with
--server_address=shm:NAME, to the end of the learner's frame budget."""

import os

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
