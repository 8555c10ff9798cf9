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
  for expected, actual in zip(default, xla):
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-5)


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
