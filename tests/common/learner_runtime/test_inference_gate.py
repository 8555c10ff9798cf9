"""Inference waits while a training step holds the gate, and only then."""

import threading

import pytest
import tensorflow as tf

from seed_rl.common.learner_runtime import InferenceGate

pytestmark = pytest.mark.timeout(60)


def _inference(gate, counter):
  @tf.function
  def infer(x):
    return gate.around(lambda: (x + counter.assign_add(1.), x * 2.))
  return infer


def test_inference_passes_an_open_gate_and_returns_its_results():
  gate, counter = InferenceGate(), tf.Variable(0.)
  infer = _inference(gate, counter)
  for i in range(3):
    total, double = infer(tf.constant(1.))
    assert (float(total), float(double)) == (2. + i, 2.)


def test_inference_waits_while_training_holds_the_gate():
  gate, counter = InferenceGate(), tf.Variable(0.)
  infer = _inference(gate, counter)
  infer(tf.constant(0.))  # Traced before the gate closes.
  done = threading.Event()
  thread = threading.Thread(target=lambda: (infer(tf.constant(0.)), done.set()), daemon=True)
  with gate.closed():
    thread.start()
    assert not done.wait(1.0), 'inference ran while a training step held the gate'
    assert float(counter.numpy()) == 1.
  assert done.wait(10.0), 'inference did not resume once the gate opened'
  thread.join(10)
  assert float(counter.numpy()) == 2.


def test_the_gate_opens_again_when_the_training_step_fails():
  gate, counter = InferenceGate(), tf.Variable(0.)
  with pytest.raises(RuntimeError):
    with gate.closed():
      raise RuntimeError('a failing step')
  infer = _inference(gate, counter)
  result = []
  thread = threading.Thread(target=lambda: result.append(infer(tf.constant(1.))), daemon=True)
  thread.start()
  thread.join(10)
  assert result, 'the gate stayed closed after a failed step'
