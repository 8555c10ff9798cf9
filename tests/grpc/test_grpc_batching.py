"""seed_rl.grpc.batching without gRPC or TensorFlow: detection, validation, batching, fan-out."""

import concurrent.futures
import re
import threading
import time

import numpy as np
import pytest

from seed_rl.grpc import batching
from seed_rl.grpc import codec
from seed_rl.grpc import errors
from seed_rl.grpc import service_pb2
from tests.grpc import reference_encoding

INT32 = service_pb2.DT_INT32
FLOAT = service_pb2.DT_FLOAT


@pytest.mark.timeout(10)
@pytest.mark.parametrize('inputs, outputs, expected', [
    ([(4,)], [(4,)], 4),
    ([(4, 3), (4,)], [(4, 2), (None,), None], 4),  # unknown leading dim / rank allowed
    ([(4,)], [], 4),                                 # no outputs
    ([], [(4,)], None),                              # no inputs
    ([(2,), (2,)], [()], None),                      # rank-0 output
    ([(4,), (3,)], [(4,)], None),                    # different leading dims
    ([()], [(1,)], None),                            # rank-0 input
    ([(4,)], [(3,)], None),                          # output batch differs
    ([(None,)], [(None,)], None),                    # unknown batch size
    ([(4, None)], [(4,)], None),                     # not fully defined input
    ([None], [(4,)], None),                          # unknown input rank
])
def test_detect_batch_size(inputs, outputs, expected):
  assert batching.detect_batch_size(inputs, outputs) == expected


def _request(*arrays, function='f'):
  request = reference_encoding.call_request(function, list(arrays))
  return service_pb2.CallRequest.FromString(request.SerializeToString())


def _response(payload):
  response = service_pb2.CallResponse.FromString(payload)
  if response.status_code:
    return response.status_code, response.status_error_message
  return [codec.decode_tensor(t) for t in response.tensor]


class Recorder:
  """A numpy runner that records its inputs; output = first input + 1 (and input 0 * 10)."""

  def __init__(self, fail=None):
    self.calls = []
    self.fail = fail

  def __call__(self, arrays):
    self.calls.append([np.array(a) for a in arrays])
    if self.fail is not None:
      raise self.fail
    return [arrays[0] + 1, arrays[0] * 10]


def _execute(job):
  for slot, payload in job.run():
    slot.set_result(payload)


def _batcher(shapes, codes=None, runners=None, batch_size='auto', output_codes=(INT32, INT32)):
  codes = codes or [INT32] * len(shapes)
  args = [batching.ArgSpec(c, s) for c, s in zip(codes, shapes)]
  if batch_size == 'auto':
    batch_size = batching.detect_batch_size(shapes, [shapes[0], shapes[0]])
  spec = batching.MethodSpec('f', args, list(output_codes), batch_size,
                             runners or [Recorder()])
  batcher = batching.MethodBatcher(spec, _execute)
  _BATCHERS.append(batcher)
  return batcher, spec


_BATCHERS = []  # Those of the running test, whose waiting callers the pool answers at its end.


@pytest.fixture
def pool():
  with concurrent.futures.ThreadPoolExecutor(16) as executor:
    try:
      yield executor
    finally:  # A failed test must not leave the pool's threads waiting forever.
      for batcher in _BATCHERS:
        batcher.fail_pending(errors.CANCELLED, 'the test ended')
      _BATCHERS.clear()


@pytest.mark.timeout(20)
def test_client_blocks_fill_one_batch_sliced_per_caller(pool):
  batcher, spec = _batcher([(4,)])
  a = pool.submit(batcher.call, _request(np.array([1, 2], np.int32)))
  b = pool.submit(batcher.call, _request(np.array([10, 20], np.int32)))
  out_a, out_b = _response(a.result(10)), _response(b.result(10))
  assert len(spec.runners[0].calls) == 1
  assert sorted(spec.runners[0].calls[0][0].tolist()) == [1, 2, 10, 20]
  np.testing.assert_array_equal(out_a[0], [2, 3])
  np.testing.assert_array_equal(out_b[0], [11, 21])
  np.testing.assert_array_equal(out_b[1], [100, 200])


@pytest.mark.timeout(20)
def test_mixed_single_and_block_callers_get_their_own_shapes(pool):
  # The original decided slice-or-element for everybody from the completing call; here each
  # caller gets outputs shaped like its inputs.
  batcher, _ = _batcher([(3,)])
  single = pool.submit(batcher.call, _request(np.int32(5)))
  while not batcher._current.callers:  # pylint: disable=protected-access
    pass
  block = pool.submit(batcher.call, _request(np.array([7, 8], np.int32)))
  out_single, out_block = _response(single.result(10)), _response(block.result(10))
  assert out_single[0].shape == () and out_single[0] == 6
  np.testing.assert_array_equal(out_block[0], [8, 9])


@pytest.mark.timeout(20)
def test_full_batch_from_one_client_is_a_direct_call():
  batcher, spec = _batcher([(2,)])
  out = _response(batcher.call(_request(np.array([3, 4], np.int32))))
  np.testing.assert_array_equal(out[0], [4, 5])
  assert len(spec.runners[0].calls) == 1


def _wait_for(condition):
  while not condition():
    time.sleep(0.001)


def _queued_rows(batcher):
  pending = batcher.pending()
  return pending.queued_rows if pending is not None else 0


def _three_rows_then_two_that_wait(pool):
  """A batcher of 4 rows with a call of 3 rows in its batch and one of 2 waiting for the next."""
  batcher, spec = _batcher([(4,)])
  first = pool.submit(batcher.call, _request(np.array([1, 2, 3], np.int32)))
  _wait_for(lambda: batcher.pending() is not None)
  second = pool.submit(batcher.call, _request(np.array([5, 6], np.int32)))
  _wait_for(lambda: _queued_rows(batcher) == 2)
  return batcher, spec, first, second


@pytest.mark.timeout(20)
def test_a_call_that_does_not_fit_waits_for_the_next_batch(pool):
  # 2 rows for the 1 free row: the call waits for the next batch instead of being refused.
  batcher, spec, first, second = _three_rows_then_two_that_wait(pool)
  pending = batcher.pending()
  assert (pending.rows, pending.callers, pending.queued_callers) == (3, 1, 1)
  assert [a.tolist() for a in pending.queued_inputs] == [[5, 6]]
  last = pool.submit(batcher.call, _request(np.int32(9)))
  np.testing.assert_array_equal(_response(first.result(10))[0], [2, 3, 4])
  assert _response(last.result(10))[0] == 10
  pending = batcher.pending()
  assert (pending.rows, pending.queued_rows, pending.full_batches) == (2, 0, 1)
  assert not second.done()
  pool.submit(batcher.call, _request(np.array([7, 8], np.int32))).result(10)
  np.testing.assert_array_equal(_response(second.result(10))[0], [6, 7])
  assert [c[0].tolist() for c in spec.runners[0].calls] == [[1, 2, 3, 9], [5, 6, 7, 8]]


@pytest.mark.timeout(20)
def test_waiting_calls_are_placed_in_order_and_the_one_that_fills_a_batch_runs_it(pool):
  threads = []

  def runner(arrays):
    threads.append(threading.current_thread().name)
    return [arrays[0] + 1, arrays[0]]

  batcher, _ = _batcher([(8,)], runners=[runner])
  calls = [pool.submit(batcher.call, _request(np.int32(0)))]
  _wait_for(lambda: batcher.pending() is not None)
  for n, start in enumerate((10, 20, 30)):  # 4 rows fit into the 7 free ones, 8 rows wait.
    calls.append(pool.submit(batcher.call,
                             _request(np.arange(start, start + 4, dtype=np.int32))))
    _wait_for(lambda n=n: batcher.pending().rows + batcher.pending().queued_rows == 5 + 4 * n)
  assert batcher.pending().queued_callers == 2
  # The last 3 free rows: the batch runs, and the two waiting calls fill the next one, which
  # the thread of the call that filled it runs.
  calls.append(pool.submit(batcher.call, _request(np.array([40, 41, 42], np.int32))))
  outputs = [_response(call.result(10))[0].tolist() for call in calls]
  assert outputs == [1, [11, 12, 13, 14], [21, 22, 23, 24], [31, 32, 33, 34], [41, 42, 43]]
  assert batcher.pending() is None
  assert len(threads) == 2 and threads[0] != threads[1]


@pytest.mark.timeout(20)
def test_fail_pending_answers_the_calls_waiting_for_the_next_batch_too(pool):
  batcher, spec, first, second = _three_rows_then_two_that_wait(pool)
  batcher.fail_pending(errors.UNAVAILABLE, 'server closed')
  assert _response(first.result(10)) == (errors.UNAVAILABLE, 'server closed')
  assert _response(second.result(10)) == (errors.UNAVAILABLE, 'server closed')
  assert batcher.pending() is None and not spec.runners[0].calls
  both = [pool.submit(batcher.call, _request(np.array([i, i], np.int32))) for i in (7, 8)]
  assert sorted(_response(call.result(10))[0].tolist() for call in both) == [[8, 8], [9, 9]]


def _pad(views):
  for view in views:
    view[...] = -1


@pytest.mark.timeout(20)
def test_run_padded_runs_the_batch_as_seen_and_drops_the_padding_rows_outputs(pool):
  batcher, spec = _batcher([(8,), (8,)])
  four = pool.submit(batcher.call, _request(np.arange(4, dtype=np.int32), np.zeros(4, np.int32)))
  _wait_for(lambda: batcher.pending() is not None)
  one = pool.submit(batcher.call, _request(np.int32(7), np.int32(0)))
  _wait_for(lambda: batcher.pending().rows == 5)
  waiting = pool.submit(batcher.call, _request(np.arange(10, 14, dtype=np.int32),
                                               np.zeros(4, np.int32)))
  _wait_for(lambda: batcher.pending().queued_rows == 4)
  assert batcher.pending().run_padded(_pad)
  np.testing.assert_array_equal(_response(four.result(10))[0], [1, 2, 3, 4])
  assert _response(one.result(10))[0].tolist() == 8
  assert [a.tolist() for a in spec.runners[0].calls[0]] == [[0, 1, 2, 3, 7, -1, -1, -1],
                                                            [0, 0, 0, 0, 0, -1, -1, -1]]
  # The waiting call is in the next batch, which runs once it is full.
  pending = batcher.pending()
  assert (pending.rows, pending.queued_rows, pending.full_batches) == (4, 0, 0)
  pool.submit(batcher.call, _request(np.arange(20, 24, dtype=np.int32),
                                     np.zeros(4, np.int32))).result(10)
  np.testing.assert_array_equal(_response(waiting.result(10))[0], [11, 12, 13, 14])
  assert spec.runners[0].calls[1][0].tolist() == [10, 11, 12, 13, 20, 21, 22, 23]


@pytest.mark.timeout(20)
def test_run_padded_pads_only_the_batch_it_saw(pool):
  batcher, spec = _batcher([(4,)])
  first = pool.submit(batcher.call, _request(np.int32(1)))
  _wait_for(lambda: batcher.pending() is not None)
  seen = batcher.pending()
  second = pool.submit(batcher.call, _request(np.int32(2)))
  _wait_for(lambda: batcher.pending().rows == 2)
  assert not seen.run_padded(_pad)  # A row joined since: nothing runs.
  assert batcher.pending().rows == 2 and not spec.runners[0].calls
  seen = batcher.pending()
  rest = pool.submit(batcher.call, _request(np.array([3, 4], np.int32)))
  assert [_response(call.result(10))[0].tolist() for call in (first, second, rest)] == [
      2, 3, [4, 5]]
  # The batch ran full, and its buffers now take the next one's rows: still not the batch seen.
  third = pool.submit(batcher.call, _request(np.array([5, 6], np.int32)))
  _wait_for(lambda: batcher.pending() is not None)
  assert not seen.run_padded(_pad)
  assert len(spec.runners[0].calls) == 1
  assert batcher.pending().run_padded(_pad)
  assert _response(third.result(10))[0].tolist() == [6, 7]


@pytest.mark.timeout(20)
def test_a_failing_padder_answers_the_callers_and_raises(pool):
  batcher, spec = _batcher([(4,)])
  waiting = pool.submit(batcher.call, _request(np.int32(1)))
  _wait_for(lambda: batcher.pending() is not None)

  def bad_pad(views):
    raise ValueError('no padding today')

  with pytest.raises(ValueError, match='no padding today'):
    batcher.pending().run_padded(bad_pad)
  code, message = _response(waiting.result(10))
  assert code == errors.INTERNAL and 'no padding today' in message
  assert not spec.runners[0].calls and batcher.pending() is None


@pytest.mark.timeout(60)
def test_many_threads_of_calls_of_any_size_each_get_their_own_rows(pool):
  """Thread safety: calls of 1 to 5 rows from 12 threads into batches of 6, with waiting calls
  and, at the end, a padded run of what is left; every row is answered once, with its output."""
  batch_size, threads, calls_per_thread = 6, 12, 25
  batcher, spec = _batcher([(batch_size,)])

  def actor(index):
    rng = np.random.default_rng(index)
    sent = []
    for call in range(calls_per_thread):
      rows = int(rng.integers(1, batch_size))
      values = (index * 1000 + call * 10 + np.arange(rows)).astype(np.int32)
      out = _response(batcher.call(_request(values)))[0]
      np.testing.assert_array_equal(out, values + 1)
      sent.extend(values.tolist())
    return sent

  actors = [pool.submit(actor, i) for i in range(threads)]
  while not all(a.done() for a in actors):
    time.sleep(0.01)
    pending = batcher.pending()
    if pending is not None and pending.waiting_secs >= 0.01:
      pending.run_padded(_pad)  # The last calls could not fill a batch.
  sent = sorted(row for a in actors for row in a.result())
  ran = np.concatenate([call[0] for call in spec.runners[0].calls])
  assert all(len(call[0]) == batch_size for call in spec.runners[0].calls)
  assert sorted(ran[ran >= 0].tolist()) == sent  # Each row ran once.


@pytest.mark.timeout(20)
@pytest.mark.parametrize('arrays, message', [
    ((np.int32(1), np.int32(2)), 'Expects 1 arguments, but 2 is provided'),
    ((np.zeros((1, 2, 3), np.int32),),
     r'Expects arg\[0\] to have shape with 1 dimension\(s\), but had shape \[1,2,3\]'),
    ((np.zeros((2, 4), np.int32),),
     r'Expects arg\[0\] to have shape with suffix \[3\], but had shape \[2,4\]'),
    ((np.zeros(3, np.float32),), r'Expects arg\[0\] to be int32 but float is provided'),
    ((np.array([['a', 'b', 'c']]),), r'Expects arg\[0\] to be int32 but string is provided'),
])
def test_validation_messages(arrays, message):
  batcher, spec = _batcher([(4, 3)])
  code, text = _response(batcher.call(_request(*arrays)))
  assert code == errors.INVALID_ARGUMENT
  assert re.search(message, text), text
  assert not spec.runners[0].calls
  assert batcher._current.filled == 0  # pylint: disable=protected-access


@pytest.mark.timeout(20)
def test_validation_order_is_count_rank_suffix_dtype():
  batcher, _ = _batcher([(4, 3), (4,)])
  # Wrong rank of arg 0 and wrong dtype of arg 1: the rank of arg 0 is reported.
  code, text = _response(batcher.call(_request(np.zeros((1, 1, 3), np.float32),
                                               np.zeros(1, np.float32))))
  assert code == errors.INVALID_ARGUMENT
  assert 'Expects arg[0] to have shape with 1 dimension(s), but had shape [1,1,3]' in text
  # Right shapes, dtype of arg 0 wrong.
  code, text = _response(batcher.call(_request(np.zeros((1, 3), np.float32),
                                               np.zeros(1, np.int32))))
  assert code == errors.INVALID_ARGUMENT and 'arg[0] to be int32 but float' in text


@pytest.mark.timeout(20)
def test_inconsistent_batch_dimension():
  batcher, _ = _batcher([(4,), (4,)])
  code, text = _response(batcher.call(_request(np.zeros(2, np.int32), np.zeros(3, np.int32))))
  assert code == errors.INVALID_ARGUMENT
  assert 'Expects arg[1] to start with the batching dimension 2 but had shape [3]' in text


@pytest.mark.timeout(20)
def test_content_size_mismatch_is_reported_without_writing():
  batcher, _ = _batcher([(4,)])
  request = service_pb2.CallRequest(function='f', tensor=[
      service_pb2.Tensor(dtype=INT32, shape=[2], content=b'\0' * 7)])
  code, text = _response(batcher.call(request))
  assert code == errors.INVALID_ARGUMENT and 'Cannot parse tensor arg[0]' in text
  assert batcher._current.filled == 0  # pylint: disable=protected-access


@pytest.mark.timeout(20)
def test_error_in_function_reaches_every_caller_of_the_batch(pool):
  class FakeOpError(Exception):
    error_code = errors.OUT_OF_RANGE
    message = 'queue closed'

  batcher, _ = _batcher([(2,)], runners=[Recorder(fail=FakeOpError())])
  a = pool.submit(batcher.call, _request(np.int32(1)))
  b = pool.submit(batcher.call, _request(np.int32(2)))
  assert _response(a.result(10)) == (errors.OUT_OF_RANGE, 'queue closed')
  assert _response(b.result(10)) == (errors.OUT_OF_RANGE, 'queue closed')


@pytest.mark.timeout(20)
def test_python_exception_is_unknown():
  batcher, _ = _batcher([(1,)], runners=[Recorder(fail=ValueError('boom'))])
  code, text = _response(batcher.call(_request(np.int32(1))))
  assert code == errors.UNKNOWN and 'ValueError: boom' in text


@pytest.mark.timeout(20)
@pytest.mark.parametrize('output, message', [
    (np.int32(1), 'Output must be at least rank 1 when batching is enabled'),
    (np.zeros(3, np.int32), 'expected: 2 was: 3'),
])
def test_bad_batched_outputs(output, message, pool):
  batcher, _ = _batcher([(2,)], runners=[lambda arrays: [output, output]])
  a = pool.submit(batcher.call, _request(np.int32(1)))
  b = pool.submit(batcher.call, _request(np.int32(2)))
  for future in (a, b):
    code, text = _response(future.result(10))
    assert code == errors.INVALID_ARGUMENT and message in text


@pytest.mark.timeout(20)
def test_round_robin_per_batch():
  runners = [Recorder(), Recorder(), Recorder()]
  batcher, _ = _batcher([(1,)], runners=runners)
  for i in range(7):
    batcher.call(_request(np.int32(i)))
  assert [len(r.calls) for r in runners] == [3, 2, 2]
  assert [c[0].tolist() for c in runners[1].calls] == [[1], [4]]


class _CountedBatch(batching._Batch):  # pylint: disable=protected-access
  made = 0

  def __init__(self, args):
    super().__init__(args)
    _CountedBatch.made += 1


@pytest.mark.timeout(20)
def test_buffers_of_a_batch_that_ran_are_used_again(monkeypatch):
  monkeypatch.setattr(batching, '_Batch', _CountedBatch)
  _CountedBatch.made = 0
  inputs = []

  def runner(arrays):  # Keeps no reference to its inputs.
    inputs.append(arrays[0].tolist())
    return [arrays[0] + 1, arrays[0]]

  batcher, _ = _batcher([(1,)], runners=[runner])
  for i in range(6):
    assert _response(batcher.call(_request(np.int32(i))))[0] == i + 1
  assert inputs == [[i] for i in range(6)]
  # The first batch, and the one made while it ran: then each takes the buffers of the one
  # before last.
  assert _CountedBatch.made == 2


@pytest.mark.timeout(20)
def test_buffers_the_function_keeps_are_never_written_again():
  kept = []

  def runner(arrays):
    kept.append(arrays[0])  # Like a tensor of them in a queue: a reference to the array.
    return [arrays[0] + 1, arrays[0]]

  batcher, _ = _batcher([(1,)], runners=[runner])
  for i in range(6):
    assert _response(batcher.call(_request(np.int32(i))))[0] == i + 1
  assert [a.tolist() for a in kept] == [[i] for i in range(6)]


@pytest.mark.timeout(20)
def test_fail_pending_answers_waiting_callers(pool):
  batcher, spec = _batcher([(3,)])
  waiting = pool.submit(batcher.call, _request(np.int32(1)))
  while not batcher._current.callers:  # pylint: disable=protected-access
    pass
  batcher.fail_pending(errors.UNAVAILABLE, 'server closed')
  assert _response(waiting.result(10)) == (errors.UNAVAILABLE, 'server closed')
  assert not spec.runners[0].calls


@pytest.mark.timeout(20)
def test_several_batches_in_flight(pool):
  """The function of batch n+1 runs while the one of batch n is still running."""
  started = [threading.Event(), threading.Event()]
  release = threading.Event()
  count = iter(range(2))

  def runner(arrays):
    started[next(count)].set()
    assert release.wait(10)
    return [arrays[0], arrays[0]]

  batcher, _ = _batcher([(1,)], runners=[runner])
  first = pool.submit(batcher.call, _request(np.int32(1)))
  assert started[0].wait(10)
  second = pool.submit(batcher.call, _request(np.int32(2)))
  assert started[1].wait(10)  # Would time out if executions were serialized.
  release.set()
  assert _response(first.result(10))[0] == 1
  assert _response(second.result(10))[0] == 2


@pytest.mark.timeout(20)
def test_strings_are_batched(pool):
  def runner(arrays):
    shout = np.array([x + b'!' for x in arrays[0]], dtype=object)
    return [shout, arrays[0]]

  batcher, _ = _batcher([(2,)], codes=[codec.DT_STRING], runners=[runner],
                        output_codes=[codec.DT_STRING, codec.DT_STRING])
  a = pool.submit(batcher.call, _request('ab'))
  b = pool.submit(batcher.call, _request(np.array(['c'])))
  out_a, out_b = _response(a.result(10)), _response(b.result(10))
  assert out_a[0].shape == () and out_a[0][()] == b'ab!'
  assert out_b[0].tolist() == [b'c!'] and out_b[1].tolist() == [b'c']


@pytest.mark.timeout(20)
def test_unbatched_function_exact_shapes():
  batcher, spec = _batcher([(2,)], batch_size=None)
  out = _response(batcher.call(_request(np.array([1, 2], np.int32))))
  np.testing.assert_array_equal(out[0], [2, 3])
  code, text = _response(batcher.call(_request(np.int32(1))))
  assert 'Expects arg[0] to have shape with 1 dimension(s), but had shape []' in text
  assert len(spec.runners[0].calls) == 1


@pytest.mark.timeout(20)
def test_pending_shows_a_partial_batch_and_copies_its_rows_once_it_waited(pool):
  batcher, spec = _batcher([(4,), (4,)])
  assert batcher.pending() is None  # Nothing waiting.
  first = pool.submit(batcher.call, _request(np.array([7, 8], np.int32),
                                             np.array([1, 2], np.int32)))
  while not batcher._current.callers:  # pylint: disable=protected-access
    pass
  since = batcher._current.since  # pylint: disable=protected-access
  pending = batcher.pending(min_waiting_secs=5., now=since + 1.)
  assert (pending.method, pending.batch_size, pending.rows, pending.callers) == ('f', 4, 2, 1)
  assert pending.waiting_secs == pytest.approx(1.)
  assert pending.inputs is None  # Not waited long enough: nothing copied.
  pending = batcher.pending(min_waiting_secs=5., now=since + 6.)
  assert [a.tolist() for a in pending.inputs] == [[7, 8], [1, 2]]
  pending.inputs[0][:] = 0  # A copy: the batch is untouched.
  second = pool.submit(batcher.call, _request(np.int32(9), np.int32(3)))
  while batcher.pending(now=since) is not None and batcher.pending(now=since).rows < 3:
    pass
  pending = batcher.pending(min_waiting_secs=0.)
  assert (pending.rows, pending.callers) == (3, 2)
  assert pending.inputs[0].tolist() == [7, 8, 9]
  pool.submit(batcher.call, _request(np.int32(10), np.int32(4))).result(10)
  _response(first.result(10)), _response(second.result(10))
  assert spec.runners[0].calls[0][0].tolist() == [7, 8, 9, 10]
  assert batcher.pending() is None  # The full batch ran; the next one is empty.


@pytest.mark.timeout(20)
def test_pending_is_none_without_batching():
  batcher, _ = _batcher([(3,)], batch_size=None)
  assert batcher.pending() is None


def _data(*arrays, function='f'):
  return reference_encoding.call_request(function, list(arrays)).SerializeToString()


@pytest.mark.timeout(20)
@pytest.mark.parametrize('single', [True, False])  # a row joining the batch; a direct call
def test_a_request_laid_out_like_a_served_one_is_read_without_parsing(single, monkeypatch):
  batcher, spec = _batcher([(1,), (1, 3)], codes=[INT32, FLOAT])

  def arguments(first, second):
    ids, values = np.array([first], np.int32), np.full((1, 3), second, np.float32)
    return (ids[0], values[0]) if single else (ids, values)
  data = _data(*arguments(1, 1.))
  assert batcher.call_known(data) is None  # Nothing learnt yet.
  assert _response(batcher.call(service_pb2.CallRequest.FromString(data), data))[0] == 2
  monkeypatch.setattr(service_pb2.CallRequest, 'FromString', None)  # No parsing from here on.
  out = _response(batcher.call_known(_data(*arguments(7, 5.))))
  assert out[0] == 8 and out[0].shape == (() if single else (1,))
  np.testing.assert_array_equal(spec.runners[0].calls[-1][1], [[5., 5., 5.]])
  ids, values = arguments(7, 5.)
  assert batcher.call_known(_data(ids, values.astype(np.int32))) is None  # Another dtype.


@pytest.mark.timeout(20)
def test_a_request_of_wrong_sizes_is_not_learnt():
  batcher, _ = _batcher([(4,)])
  request = service_pb2.CallRequest(function='f', tensor=[
      service_pb2.Tensor(dtype=INT32, shape=[2], content=b'\0' * 7)])
  data = request.SerializeToString()
  for _ in range(2):
    assert _response(batcher.call(request, data))[0] == errors.INVALID_ARGUMENT
    assert batcher.call_known(data) is None


@pytest.mark.timeout(20)
def test_the_validator_checks_requests_read_without_parsing():
  def refuse_negative(arrays):
    if (arrays[0] < 0).any():
      raise ValueError('negative')
  args = [batching.ArgSpec(INT32, (2,))]
  runner = Recorder()
  spec = batching.MethodSpec('f', args, [INT32, INT32], 2, [runner], refuse_negative)
  batcher = batching.MethodBatcher(spec, _execute)
  data = _data(np.array([1, 2], np.int32))
  batcher.call(service_pb2.CallRequest.FromString(data), data)
  assert _response(batcher.call_known(_data(np.array([-1, 2], np.int32)))) == (
      errors.INVALID_ARGUMENT, 'negative')
  assert len(runner.calls) == 1
