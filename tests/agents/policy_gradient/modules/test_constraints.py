"""Fixed and Lagrange coefficients: values, gradients, range, and a constraint that is enforced."""

import math

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.policy_gradient.modules import constraints

pytestmark = pytest.mark.timeout(120)


def test_fixed_coefficient_scales_and_never_adjusts():
  coefficient = constraints.FixedCoefficient(0.5)
  x = tf.Variable(3.)
  with tf.GradientTape() as tape:
    loss = coefficient.scale_loss(x) + coefficient.adjustment_loss(x)
  assert float(loss) == 1.5
  assert float(tape.gradient(loss, x)) == 0.5
  assert not coefficient.trainable_variables


def test_lagrange_coefficient_rises_while_the_constraint_is_violated():
  coefficient = constraints.LagrangeInequalityCoefficient(threshold=1., init_alpha=2.,
                                                          adjustment_speed=3.)
  assert len(coefficient.trainable_variables) == 1
  np.testing.assert_allclose(float(coefficient.value), 2., rtol=1e-6)
  for x, sign in ((tf.constant([2., 3.]), -1.), (tf.constant([0., 1.]), 1.)):
    with tf.GradientTape() as tape:
      loss = coefficient.adjustment_loss(x)
    grad = float(tape.gradient(loss, coefficient.trainable_variables[0]))
    # d/dparam of alpha * (threshold - mean x), alpha = exp(3 param).
    np.testing.assert_allclose(grad, 3. * 2. * (1. - float(tf.reduce_mean(x))), rtol=1e-5)
    assert np.sign(grad) == sign


def test_scale_loss_does_not_adjust_the_coefficient():
  coefficient = constraints.LagrangeInequalityCoefficient(threshold=1.)
  x = tf.Variable(2.)
  with tf.GradientTape() as tape:
    loss = coefficient.scale_loss(x * x)
  grad_x, grad_param = tape.gradient(loss, [x, coefficient.trainable_variables[0]])
  assert float(grad_x) == 4.
  assert grad_param is None


def test_lagrange_constraint_converges_to_the_threshold():
  # Unconstrained, (x - 4)^2 pulls x to 4; with c*x under the constraint x <= 2 the saddle point
  # is x = 2, c = 4 (the slope of the objective there is -4, as that of -x^2 at x = 2; -x^2
  # itself has no minimum, and gradient descent-ascent spirals away from its saddle point).
  x = tf.Variable(0.)
  coefficient = constraints.LagrangeInequalityCoefficient(threshold=2.)
  optimizer = tf.keras.optimizers.SGD(learning_rate=0.02)

  @tf.function
  def steps(n):
    for _ in tf.range(n):
      with tf.GradientTape() as tape:
        loss = (tf.square(x - 4.) + coefficient.scale_loss(x) + coefficient.adjustment_loss(x))
      variables = [x] + list(coefficient.trainable_variables)
      optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

  steps(tf.constant(50))
  assert float(x) > 2.5  # The constraint is violated at first...
  steps(tf.constant(1500))
  np.testing.assert_allclose(float(x), 2., atol=0.01)  # ...and enforced in the end.
  np.testing.assert_allclose(float(coefficient.value), 4., atol=0.05)


def test_alpha_stays_in_its_range_and_comes_back():
  coefficient = constraints.LagrangeInequalityCoefficient(threshold=0., alpha_range=(0.1, 10.))
  param = coefficient.trainable_variables[0]
  optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)

  def step(mean_x):
    with tf.GradientTape() as tape:
      loss = coefficient.adjustment_loss(tf.constant([mean_x]))
    optimizer.apply_gradients([(tape.gradient(loss, param), param)])

  for _ in range(50):
    step(1.)  # Violated: alpha rises up to its maximum.
  np.testing.assert_allclose(float(coefficient.value), 10., rtol=1e-5)
  assert float(param) < math.log(10.) + 0.5 * 10. + 1e-6  # At most one step past the bound.
  step(-1.)
  assert float(coefficient.value) < 10.  # Satisfied: it comes down at once.
  for _ in range(50):
    step(-1.)
  np.testing.assert_allclose(float(coefficient.value), 0.1, rtol=1e-5)


def test_variables_can_wait_for_init():
  coefficient = constraints.LagrangeInequalityCoefficient(threshold=0., init_alpha=0.5,
                                                          init_variables=False)
  assert not coefficient.trainable_variables
  with pytest.raises(ValueError, match='init'):
    _ = coefficient.value
  coefficient.init()
  coefficient.init()
  assert len(coefficient.trainable_variables) == 1
  np.testing.assert_allclose(float(coefficient.value), 0.5, rtol=1e-6)


def test_bad_arguments_are_refused():
  with pytest.raises(ValueError, match='init_alpha'):
    constraints.LagrangeInequalityCoefficient(threshold=0., init_alpha=0.)
  with pytest.raises(ValueError, match='adjustment_speed'):
    constraints.LagrangeInequalityCoefficient(threshold=0., adjustment_speed=0.)
