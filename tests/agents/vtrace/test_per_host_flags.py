"""The token and TLS paths are each host's own: an actor keeps its paths across learner restarts."""

import pytest

from tests.processes import Processes

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'


@pytest.mark.timeout(300)
def test_an_actor_keeps_its_own_token_path_across_a_learner_restart(tmp_path):
  # The learner's token file is at a path the actor's host does not have (deleted once read).
  learner_token, actor_token = tmp_path / 'learner_token', tmp_path / 'actor_token'
  for path in (learner_token, actor_token):
    path.write_text('s3cret\n')
  flags = [f'--server_address=unix:{tmp_path}/learner.sock', f'--logdir={tmp_path}/logdir',
           '--num_envs=2', '--env_batch_size=2', '--inference_batch_size=2',
           '--unroll_length=10', '--batch_size=2', '--total_environment_frames=1000000',
           '--save_checkpoint_secs=100000']
  with Processes(tmp_path) as processes:
    learner = processes.start('learner_1', GYM_MAIN, flags + [
        '--run_mode=learner', f'--grpc_token_file={learner_token}'])
    actor = processes.start('actor_0', GYM_MAIN, flags + [
        '--run_mode=actor', '--task=0', f'--grpc_token_file={actor_token}'])
    learner.wait_for(r'Progress: \d+/', timeout=120)
    learner_token.unlink()
    learner.kill()
    second_token = tmp_path / 'second_learner_token'
    second_token.write_text('s3cret\n')
    second = processes.start('learner_2', GYM_MAIN, flags + [
        '--run_mode=learner', f'--grpc_token_file={second_token}'])
    actor.wait_for(r'Actor 0 connected', timeout=120, count=2)
    second.wait_for(r'Progress: \d+/', timeout=120)
    assert actor.popen.poll() is None, actor.log()[-3000:]
    assert 'learner_token' not in actor.log()
