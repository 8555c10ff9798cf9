"""The learner's start converts with AutoGraph only what may need it: the agent's functions and
the runtime's functions that call them, not the runtime's graph-building helpers."""

import re

import pytest

from tests.processes import Processes

GYM_MAIN = 'seed_rl.environments.gym.vtrace_main'

# Helpers of seed_rl.common that build graph ops only, called at every learner start: AutoGraph
# converting them cost about 2 s of a 10 s start on a 2-core machine.
_HELPERS = ('make_time_major', 'split_structure', 'from_importance_weights', 'detect_restarts',
            'get_non_dying_envs', '_first_of_repeated_rows', 'scatter_rows', 'step_end',
            'log_session_from_dict', 'enqueue_many', 'dequeue_many', 'replace', 'read', 'add',
            '_append_training_steps', '_finite_rows', '_apply_if_finite', '_all_finite',
            '_gather_over_replicas', '_split_over_replicas', 'update', 'get_config',
            'serialize_config', 'serialize_config_json', 'iterencode', 'dumps')


@pytest.mark.timeout(180)
def test_a_learner_start_converts_no_graph_building_helper(tmp_path):
  autograph_dir = tmp_path / 'tmp'
  autograph_dir.mkdir()
  flags = [f'--server_address=unix:{tmp_path}/learner.sock', f'--logdir={tmp_path}/logdir',
           '--num_envs=8', '--env_batch_size=4', '--inference_batch_size=4',
           '--total_environment_frames=1000000', '--save_checkpoint_secs=100000']
  with Processes(tmp_path) as processes:
    # AutoGraph writes each function it converts to a file in the temporary directory, which
    # it removes when the process exits.
    learner = processes.start('learner', GYM_MAIN, flags + ['--run_mode=learner'],
                              env={'TMPDIR': str(autograph_dir)})
    for task in (0, 1):
      processes.start(f'actor_{task}', GYM_MAIN, flags + ['--run_mode=actor', f'--task={task}'])
    learner.wait_for(r'Progress: \d+/', timeout=120, count=2)
    converted = [name for path in autograph_dir.glob('__autograph_generated_file*.py')
                 for name in re.findall(r'^\s*def tf__(\w+)\(', path.read_text(), re.MULTILINE)]
  # The inference function and the training step are converted, with the agent's functions.
  assert {'inference', 'minimize', 'compute_loss'} <= set(converted), converted
  assert not set(converted) & set(_HELPERS), converted
  # 22 functions in all when this test was written, against 60 when the helpers were converted.
  assert len(converted) <= 30, converted
