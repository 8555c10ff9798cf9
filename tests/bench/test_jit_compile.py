"""bench/jit_compile.py: both networks run both ways on tiny shapes, XLA computes what the
default does, and the report names each part with its ratio."""

import argparse

import numpy as np
import pytest

from bench import jit_compile

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize('network', ['nature', 'impala'])
def test_xla_and_default_compute_the_same_gradient(network):
  model = jit_compile.create_network(network)
  default = jit_compile.training_gradient(model, batch_size=2, unroll_length=2,
                                          jit_compile=False)()
  xla = jit_compile.training_gradient(model, batch_size=2, unroll_length=2, jit_compile=True)()
  assert len(default) == len(xla) == len(model.trainable_variables)
  # Compared per variable by the norm of the difference, not element by element: the two ways
  # round float32 differently, and a rounding that flips a near-tie of a ReLU or of a max-pool
  # moves a few elements by a few percent (seen on another CPU: 1.4e-4 on elements of 0.03,
  # 1e-3 of the variable's norm here). A wrong gradient differs by the order of the norm itself.
  for variable, expected, actual in zip(model.trainable_variables, default, xla):
    error = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
    assert error < 2e-2, f'{variable.name}: XLA gradient differs by {error:.1e} of its norm'


def test_measure_times_both_parts_both_ways_and_reports_the_ratio():
  args = argparse.Namespace(network='nature', inference_batch_size=2, batch_size=2,
                            unroll_length=2, seconds=0.05, repeats=1)
  results = jit_compile.measure(args)
  assert set(results) == {'inference', 'training'}
  for times in results.values():
    assert set(times) == {False, True} and all(t > 0 for t in times.values())
  lines = jit_compile.format_results('nature', results)
  assert lines[0].startswith('nature inference: default ') and 'XLA / default' in lines[0]
  ratio = float(lines[1].rsplit(' ', 1)[1])
  assert ratio == pytest.approx(results['training'][True] / results['training'][False], abs=0.01)


def test_an_unknown_network_is_refused():
  with pytest.raises(ValueError, match='network must be nature or impala'):
    jit_compile.create_network('minimal')
