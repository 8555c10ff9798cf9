"""Running statistics, PPO's observation normalizer and PopArt refuse non-finite updates.

An observation of 1e30 is finite, but its square is not in float32: such an update is refused
(the statistics keep their old values), counted, and the next update with ordinary data works.
"""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import continuous_control_agent
from seed_rl.agents.policy_gradient.modules import input_normalization
from seed_rl.agents.policy_gradient.modules import popart
from seed_rl.agents.policy_gradient.modules import running_statistics as rs
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput
from seed_rl.common.training import update_gate

pytestmark = pytest.mark.timeout(60)

OBS_SIZE = 3
TRACKERS = {
    'average': rs.AverageMeanStd,
    'two_level': lambda: rs.TwoLevelAverageMeanStd(buffer_size=2),
    'ema': lambda: rs.EMAMeanStd(beta=.5),
}


def _refused(kind: str) -> int:
  return update_gate.refused_counts().get(f'refused {kind}', 0)


def _all_finite(variables) -> bool:
  return all(np.all(np.isfinite(v.numpy())) for v in variables)


def _ppo_agent(tracker):
  agent = continuous_control_agent.ContinuousControlAgent(
      parametric_distribution.normal_tanh_distribution(2),
      num_units_policy=8, num_units_value=8,
      observation_normalizer=input_normalization.InputNormalization(tracker),
      correct_observations=True)
  observation = tf.zeros([1, OBS_SIZE])
  agent((tf.zeros([1, 2]), EnvOutput(reward=tf.zeros([1]), done=tf.zeros([1], tf.bool),
                                     observation=observation,
                                     abandoned=tf.zeros([1], tf.bool),
                                     episode_step=tf.zeros([1], tf.int32))),
        agent.initial_state(1))
  return agent


@pytest.mark.parametrize('tracker', sorted(TRACKERS))
def test_ppo_observation_normalizer_refuses_1e30_and_keeps_learning(tracker):
  agent = _ppo_agent(TRACKERS[tracker]())
  normalizer = agent.observation_normalizer
  update = tf.function(agent.update_observation_normalization_statistics)
  rng = np.random.default_rng(0)
  first = rng.normal(5., 2., size=[16, OBS_SIZE]).astype(np.float32)
  update(first)
  mean_before, std_before = [x.numpy() for x in normalizer.get_mean_std()]
  refused_before = _refused('running statistics updates')

  update(np.full([16, OBS_SIZE], 1e30, np.float32))

  mean, std = [x.numpy() for x in normalizer.get_mean_std()]
  np.testing.assert_array_equal(mean, mean_before)
  np.testing.assert_array_equal(std, std_before)
  assert _all_finite(agent.variables)
  assert _refused('running statistics updates') == refused_before + 1
  # Ordinary data afterwards is taken as if the extreme batch had never come.
  second = rng.normal(-1., 3., size=[16, OBS_SIZE]).astype(np.float32)
  update(second)
  mean, _ = [x.numpy() for x in normalizer.get_mean_std()]
  assert not np.allclose(mean, mean_before)
  if tracker != 'ema':
    np.testing.assert_allclose(mean, np.concatenate([first, second]).mean(0), rtol=1e-4)
  assert _all_finite(agent.variables)


def test_merge_moments_squares_after_weighting():
  # A thousandth of a sample 1e20 away: the merged summed variance (about 1e37) fits float32,
  # the square of the difference of the means (1e40) does not.
  count, mean, summed_variance = rs.merge_moments(
      tf.constant(1.), tf.constant([0.]), tf.constant([0.]),
      tf.constant(.001), tf.constant([1e20]), tf.constant([0.]))
  assert np.isfinite(summed_variance.numpy()).all()
  np.testing.assert_allclose(summed_variance, [1e40 * .001 / 1.001], rtol=1e-5)
  np.testing.assert_allclose(mean, [1e20 * .001 / 1.001], rtol=1e-5)
  np.testing.assert_allclose(count, 1.001)


def test_popart_refuses_a_huge_target_and_keeps_its_predictions():
  module = popart.PopArt(rs.AverageMeanStd())
  module.init()
  update = tf.function(module.update_normalization_statistics)
  update(tf.constant([1., 3., 8.]))
  outputs = tf.constant([-1., 0., 2.])
  values_before = module.unnormalize_prediction(module.correct_prediction(outputs)).numpy()
  variables_before = [v.numpy() for v in module.variables]
  refused_before = _refused('running statistics updates')

  update(tf.constant([1e30, -1e30, 2.]))

  assert _refused('running statistics updates') == refused_before + 1
  for variable, before in zip(module.variables, variables_before):
    np.testing.assert_array_equal(variable.numpy(), before)
  np.testing.assert_array_equal(
      module.unnormalize_prediction(module.correct_prediction(outputs)), values_before)
  # The next ordinary targets move the statistics; the compensation keeps the predictions.
  update(tf.constant([20., 30.]))
  mean, _ = module.mean_std_tracker.get_mean_std()
  np.testing.assert_allclose(mean, [np.mean([1., 3., 8., 20., 30.])], rtol=1e-5)
  np.testing.assert_allclose(
      module.unnormalize_prediction(module.correct_prediction(outputs)), values_before,
      rtol=1e-4, atol=1e-5)
  assert _all_finite(module.variables)


def test_popart_refuses_a_compensation_that_would_overflow():
  module = popart.PopArt(rs.AverageMeanStd())
  module.init()
  update = tf.function(module.update_normalization_statistics)
  update(tf.constant([-10., 10.]))  # std 10
  module.compensation_std.assign(1e38)  # Finite, but not once the std shrinks 20-fold.
  refused_before = _refused('PopArt compensation updates')

  update(tf.constant([0.] * 1000))

  assert _refused('PopArt compensation updates') == refused_before + 1
  assert module.compensation_std.numpy() == np.float32(1e38)
  assert _all_finite(module.variables)


def test_input_normalization_refuses_a_compensation_that_would_overflow():
  normalization = input_normalization.InputNormalization(rs.AverageMeanStd())
  normalization.init_normalization_stats(OBS_SIZE)
  normalization.update_normalization_statistics(tf.constant([[0.] * OBS_SIZE, [1.] * OBS_SIZE]))
  normalization.compensation_std.assign(tf.fill([OBS_SIZE], 3e38))
  before = [v.numpy().copy() for v in (normalization.compensation_std,
                                       normalization.compensation_mean)]
  refused = _refused('input normalization compensation updates')
  # The spread grows a hundredfold: scale * new_std / old_std overflows float32.
  normalization.update_normalization_statistics(tf.constant([[-1e3] * OBS_SIZE, [1e3] * OBS_SIZE]))
  assert _refused('input normalization compensation updates') == refused + 1
  for variable, old in zip((normalization.compensation_std, normalization.compensation_mean),
                           before):
    np.testing.assert_array_equal(variable.numpy(), old)
