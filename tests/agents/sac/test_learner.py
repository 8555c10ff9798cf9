"""The SAC learner's configuration: insertion batch (with and without HER) and its checks."""

import pytest

from seed_rl.agents.sac import config as config_lib
from seed_rl.agents.sac import learner

pytestmark = pytest.mark.timeout(60)


def _config(**overrides):
  values = dict(batch_size=256, replay_ratio=4., her_window_length=None, unroll_length=1,
                num_envs=8, num_eval_envs=0, unroll_queue_max_size=100, replay_buffer_size=1000,
                update_target_every_n_step=1, polyak=0.9)
  values.update(overrides)
  return config_lib.SACConfig(**values)


def test_insertion_batch_size_counts_windows_with_hindsight_replay():
  assert learner.get_replay_insertion_batch_size(_config()) == 64
  assert learner.get_replay_insertion_batch_size(
      _config(her_window_length=8, unroll_length=2)) == 16


@pytest.mark.parametrize('overrides, message', [
    (dict(replay_ratio=512.), 'at least 1 unroll per training step'),
    (dict(unroll_queue_max_size=10), 'raise --unroll_queue_max_size'),
    (dict(her_window_length=2, unroll_length=4, replay_ratio=16.), 'must be at least unroll_length'),
    (dict(replay_buffer_size=0), 'replay_buffer_size must be positive'),
    (dict(polyak=1.5), 'polyak must be in'),
])
def test_bad_configurations_are_refused_with_the_reason(overrides, message):
  agent = learner.SACAgent(None, None, _config(**overrides))
  with pytest.raises(ValueError, match=message):
    agent.validate_config()


def test_the_store_holds_hindsight_windows():
  agent = learner.SACAgent(None, None, _config(her_window_length=8, unroll_length=2))
  assert agent.unroll_length() == 8 and agent.unrolls_per_iteration() == 16
  assert learner.SACAgent(None, None, _config()).unroll_length() == 1
