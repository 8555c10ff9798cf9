"""A replay (R2D2's prioritized one, SAC's plain or hindsight one) keeps nothing non-finite.

Items with a non-finite value or priority are left out of `insert` and counted; a non-finite
new priority keeps the old one and is counted.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import replay as replay_lib
from seed_rl.common.training import update_gate

pytestmark = pytest.mark.timeout(60)

Unroll = collections.namedtuple('Unroll', 'agent_state prev_actions env_outputs agent_outputs')
WINDOW = 3


def _refused(kind: str) -> int:
  return update_gate.refused_counts().get(f'refused {kind}', 0)


def _unrolls(observations):
  """Unrolls of WINDOW steps whose GoalEnv observation at every step is `observations[i]`."""
  observations = np.asarray(observations, np.float32)
  n = len(observations)
  goal = np.repeat(observations[:, np.newaxis, np.newaxis], WINDOW, axis=1)
  return Unroll(
      agent_state=tf.zeros([n, 2]),
      prev_actions=tf.zeros([n, WINDOW, 1]),
      env_outputs=EnvOutput(
          reward=tf.zeros([n, WINDOW]), done=tf.zeros([n, WINDOW], tf.bool),
          observation={'achieved_goal': tf.constant(goal), 'desired_goal': tf.constant(goal)},
          abandoned=tf.zeros([n, WINDOW], tf.bool),
          episode_step=tf.zeros([n, WINDOW], tf.int32)),
      agent_outputs=tf.zeros([n, WINDOW, 1]))


def _replays():
  specs = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape[1:], t.dtype), _unrolls([0.]))
  return {
      'prioritized (R2D2)': replay_lib.PrioritizedReplay(8, specs, .5),
      'hindsight (SAC)': replay_lib.HindsightExperienceReplay(
          8, specs, 0., lambda achieved, desired: tf.zeros(tf.shape(achieved)[:-1]),
          unroll_length=2, substitution_probability=.5),
  }


@pytest.mark.parametrize('name', sorted(_replays()))
def test_insert_leaves_out_and_counts_non_finite_items(name):
  replay = _replays()[name]
  refused_before = _refused('replay rows')

  indices = replay.insert(_unrolls([1., np.nan, 3., 4.]), [1., 1., np.inf, 1.])

  assert _refused('replay rows') == refused_before + 2
  assert replay.num_inserted.numpy() == 2
  np.testing.assert_array_equal(indices, [0, 1])
  _, _, sampled = replay.sample(32, 0.)
  achieved = sampled.env_outputs.observation['achieved_goal'].numpy()
  assert set(np.unique(achieved)) == {1., 4.}
  # The next finite items follow the inserted ones.
  np.testing.assert_array_equal(replay.insert(_unrolls([5.]), [1.]), [2])


def test_update_priorities_keeps_the_old_priority_where_the_new_is_not_finite():
  replay = _replays()['prioritized (R2D2)']
  replay.insert(_unrolls([1., 2., 3.]), [1., 1., 1.])
  refused_before = _refused('replay priorities')

  replay.update_priorities(tf.constant([0, 1, 2], tf.int64), [np.nan, 4., -np.inf])

  assert _refused('replay priorities') == refused_before + 2
  np.testing.assert_array_equal(replay._priorities.numpy()[:3], [1., 4., 1.])  # pylint: disable=protected-access
  _, weights, _ = replay.sample(16, 1.)
  assert np.isfinite(weights.numpy()).all()
