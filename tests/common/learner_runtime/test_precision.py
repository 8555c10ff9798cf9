"""Tests of `--mixed_precision`: which precision each mode chooses, and that bfloat16 rounds the
products of the functions run after it while their outputs and variables stay float32."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import precision


@pytest.mark.parametrize('mode, device_type, native, expected', [
    ('off', 'CPU', True, 'float32'),
    ('off', 'GPU', False, 'float32'),
    ('bfloat16', 'CPU', True, 'bfloat16'),
    ('bfloat16', 'CPU', False, 'bfloat16'),
    ('auto', 'CPU', True, 'bfloat16'),
    ('auto', 'CPU', False, 'float32'),
    ('auto', 'GPU', True, 'float32'),
])
def test_each_mode_resolves_to_its_precision(mode, device_type, native, expected):
  assert precision.resolve(mode, device_type, native) == expected


def test_bfloat16_on_a_gpu_learner_is_refused_naming_the_flag():
  with pytest.raises(ValueError, match=r'--mixed_precision=bfloat16 .* computes on GPUs'):
    precision.resolve('bfloat16', 'GPU', True)


def test_an_unknown_mode_is_refused_naming_the_modes():
  with pytest.raises(ValueError, match=r"--mixed_precision='fp8': use one of off, bfloat16, auto"):
    precision.resolve('fp8', 'CPU', True)


@pytest.mark.parametrize('flags_line, expected', [
    ('flags\t\t: fpu sse2 avx512f amx_bf16 amx_tile\n', True),
    ('flags\t\t: fpu sse2 avx512f avx512_bf16\n', True),
    ('flags\t\t: fpu sse2 avx512f avx2\n', False),
    ('flags\t\t: fpu not_amx_bf16_really\n', False),
])
def test_native_bfloat16_is_read_from_the_cpu_flags(tmp_path, flags_line, expected):
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text('processor\t: 0\nmodel name\t: amx_bf16 in a name\n' + flags_line)
  assert precision.cpu_has_native_bfloat16(str(cpuinfo)) is expected


def test_an_unreadable_cpuinfo_means_no_native_bfloat16(tmp_path):
  assert precision.cpu_has_native_bfloat16(str(tmp_path / 'missing')) is False


def _products(weights: np.ndarray, inputs: np.ndarray):
  """A new function's matrix product and its gradient, as a training step computes them."""
  variable = tf.Variable(weights)

  @tf.function
  def product_and_gradient(x):
    with tf.GradientTape() as tape:
      y = tf.matmul(x, variable)
      loss = tf.reduce_sum(y)
    return y, tape.gradient(loss, variable)

  y, gradient = product_and_gradient(tf.constant(inputs))
  return y.numpy(), gradient.numpy(), variable.dtype


@pytest.mark.timeout(60)
@pytest.mark.skipif(not precision.cpu_has_native_bfloat16(),
                    reason='the rewrite is only made on a CPU with native bfloat16')
def test_bfloat16_rounds_the_products_of_functions_run_after_it_and_keeps_float32_outside():
  rng = np.random.default_rng(0)
  # 1 + small offsets: bfloat16's 8-bit mantissa loses them, float32 keeps them.
  weights = (1 + rng.uniform(0, 2 ** -9, size=(64, 8))).astype(np.float32)
  inputs = (1 + rng.uniform(0, 2 ** -9, size=(4, 64))).astype(np.float32)
  exact = inputs.astype(np.float64) @ weights.astype(np.float64)
  try:
    assert precision.apply('bfloat16', 'CPU') == 'bfloat16'
    y, gradient, variable_dtype = _products(weights, inputs)
    # The function's outputs and variables are float32; the product was computed on inputs
    # rounded to bfloat16 (to 1 exactly), the gradient too.
    assert y.dtype == np.float32 and gradient.dtype == np.float32
    assert variable_dtype == tf.float32
    np.testing.assert_allclose(y, 64., rtol=0, atol=1e-6)
    np.testing.assert_allclose(gradient, 4., rtol=0, atol=1e-6)
  finally:
    assert precision.apply('off', 'CPU') == 'float32'
  y, gradient, _ = _products(weights, inputs)
  np.testing.assert_allclose(y, exact, rtol=1e-6)
  assert np.abs(y - 64.).max() > 0.01
