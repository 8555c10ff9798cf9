"""bench/overlapped_compute.py: inference and training at once, coupled like the learner's queue.

The calls sleep (releasing the GIL, as TensorFlow's ops do), so their costs are known and the
threads overlap as a learner's do on a machine with cores to spare.
"""

import threading
import time

import pytest

from bench import overlapped_compute


def _sleeper(seconds: float):
  return lambda: time.sleep(seconds)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('infer_secs,train_secs,rate,slower', [
    # 100 frames per 20 ms step: at most 5,000 frames/s; two threads acting 10 frames per ms
    # (20,000 frames/s) keep it fed and wait most of the time.
    (0.001, 0.02, 5000, 'training'),
    # Two threads of 10 frames per 10 ms: 2,000 frames/s; training takes 1 ms per 100 frames.
    (0.01, 0.001, 2000, 'inference'),
])
def test_the_slower_side_sets_the_rate_and_stays_busy(infer_secs, train_secs, rate, slower):
  run = overlapped_compute.measure(
      _sleeper(infer_secs), _sleeper(train_secs), frames_per_inference=10,
      frames_per_training_step=100, inference_threads=2, frames_ahead=1000, seconds=0.6,
      warmup_secs=0.1)
  assert 0.5 * rate < run.frames_per_sec <= rate * 1.01
  busy = {'training': run.training_busy, 'inference': run.inference_busy}
  faster = 'inference' if slower == 'training' else 'training'
  assert busy[slower] > 0.8
  assert busy[faster] < 0.5
  assert run.training_steps >= 3


@pytest.mark.timeout(60)
def test_acting_waits_when_frames_ahead_of_training_are_full():
  # One thread acting 1,000 frames/s, training 2,000 frames/s: unlimited, the two overlap and
  # acting sets the rate. Allowed only one call ahead, acting mostly waits while a step trains
  # (a 50 ms step, then 9 more calls of 10 ms for the next): about 100 / 0.14 = 714 frames/s.
  def rate(frames_ahead):
    return overlapped_compute.measure(
        _sleeper(0.01), _sleeper(0.05), frames_per_inference=10, frames_per_training_step=100,
        inference_threads=1, frames_ahead=frames_ahead, seconds=1.0,
        warmup_secs=0.2).frames_per_sec
  assert rate(10) < 0.85 * rate(1000)


@pytest.mark.timeout(60)
def test_acting_runs_ahead_of_training_by_at_most_the_frames_ahead_and_the_calls_in_flight():
  counts = {'infer': 0, 'train': 0}
  lock = threading.Lock()

  def counted(name, seconds):
    def call():
      with lock:
        counts[name] += 1
      time.sleep(seconds)
    return call

  # Acting (3 threads of 10 frames per ms) is 300 times as fast as training (100 frames per
  # 20 ms): it fills what may wait and then waits.
  overlapped_compute.measure(
      counted('infer', 0.001), counted('train', 0.02), frames_per_inference=10,
      frames_per_training_step=100, inference_threads=3, frames_ahead=40, seconds=0.4,
      warmup_secs=0.1)
  acted, started = counts['infer'] * 10, counts['train']
  assert acted >= started * 100  # Training never trains on frames not acted yet.
  # Taken by the steps started and the one gathering, waiting, and in flight.
  assert acted <= (started + 1) * 100 + 40 + 3 * 10


@pytest.mark.parametrize('shared', [False, True])
@pytest.mark.timeout(60)
def test_inference_calls_that_wait_for_the_training_step_show_in_the_tail(shared):
  # Inference takes 2 ms; a training step takes 60 ms, holding for 50 ms of it the one thing
  # inference needs when `shared` (as TensorFlow's threads can be): calls that meet it wait.
  resource = threading.Lock()

  def infer():
    if shared:
      with resource:
        pass
    time.sleep(0.002)

  def train():
    with resource:
      time.sleep(0.05)
    time.sleep(0.01)

  run = overlapped_compute.measure(
      infer, train, frames_per_inference=10, frames_per_training_step=100, inference_threads=2,
      frames_ahead=1000, seconds=0.8, warmup_secs=0.1)
  assert 0.002 <= run.inference_call_median_secs < 0.02
  assert run.inference_call_median_secs <= run.inference_call_p99_secs
  assert run.inference_call_p99_secs <= run.inference_call_max_secs
  if shared:
    assert run.inference_call_max_secs > 0.035
  else:
    assert run.inference_call_max_secs < 0.035


@pytest.mark.parametrize('training_computes', [False, True])
@pytest.mark.timeout(60)
def test_cores_busy_count_the_cpu_time_of_the_calls(training_computes):
  # Sleeping calls take next to no CPU time; a training step that computes in Python until its
  # thread used 20 ms of CPU time takes those 20 ms per step, however the machine is shared.
  def compute():
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
      pass

  run = overlapped_compute.measure(
      _sleeper(0.002), compute if training_computes else _sleeper(0.02),
      frames_per_inference=10, frames_per_training_step=100, inference_threads=2,
      frames_ahead=1000, seconds=0.6, warmup_secs=0.1)
  cpu_secs_per_training_step = run.cores_busy / run.frames_per_sec * 100
  if training_computes:
    assert 0.019 < cpu_secs_per_training_step < 0.03
  else:
    assert cpu_secs_per_training_step < 0.005


@pytest.mark.timeout(60)
def test_an_error_of_a_call_stops_the_measurement_and_is_raised():
  def failing():
    raise RuntimeError('inference broke')

  with pytest.raises(RuntimeError, match='inference broke'):
    overlapped_compute.measure(failing, _sleeper(0.001), frames_per_inference=1,
                               frames_per_training_step=1, inference_threads=2, frames_ahead=1,
                               seconds=5, warmup_secs=0.)


def test_counts_that_cannot_work_are_refused():
  kwargs = dict(frames_per_inference=10, frames_per_training_step=100, inference_threads=1,
                frames_ahead=100, seconds=0.1)
  for bad in [dict(frames_per_inference=0), dict(frames_per_training_step=0),
              dict(inference_threads=0), dict(frames_ahead=9)]:
    with pytest.raises(ValueError):
      overlapped_compute.measure(_sleeper(0), _sleeper(0), **{**kwargs, **bad})
