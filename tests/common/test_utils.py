"""Tests of seed_rl.common.utils: learner state, replay, queues, helpers, config transfer."""

import collections
import json
import threading
import time

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import utils
from tests.common.summaries import read_scalars

pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------------------------------------
# get_non_dying_envs


def _non_dying(envs_needing_reset, reset_mask, env_ids):
  mask, ids = utils.get_non_dying_envs(
      tf.constant(envs_needing_reset, tf.int32), tf.constant(reset_mask),
      tf.constant(env_ids, tf.int32))
  return mask.numpy().tolist(), ids.numpy().tolist()


def test_non_dying_envs_without_resets_keeps_everything():
  assert _non_dying([], [False, False, False], [0, 1, 2]) == (
      [True, True, True], [0, 1, 2])


def test_non_dying_envs_with_reset_only_keeps_everything():
  assert _non_dying([1], [False, True, False], [0, 1, 2]) == ([True, True, True], [0, 1, 2])


def test_non_dying_envs_filters_the_stale_transition_of_a_restarted_env():
  # Env 1 appears twice: the dying actor's last call (old run id) and the new actor's call.
  assert _non_dying([1], [False, False, True, False], [0, 1, 1, 2]) == (
      [True, False, True, True], [0, 1, 2])


def test_non_dying_envs_rejects_an_env_repeated_without_reset():
  with pytest.raises(tf.errors.InvalidArgumentError, match='more than once'):
    _non_dying([], [False, False, False], [0, 0, 1])


def test_non_dying_envs_rejects_two_new_transitions_of_one_env():
  with pytest.raises(tf.errors.InvalidArgumentError, match='more than once'):
    _non_dying([0, 0], [True, True], [0, 0])


# ------------------------------------------------------------------------------------------------
# UnrollStore


def _append(store, env_ids, values):
  completed, unrolls = store.append(tf.constant(env_ids, tf.int32), values)
  return completed.numpy().tolist(), tf.nest.map_structure(lambda t: t.numpy(), unrolls)


def test_unroll_store_rejects_duplicate_env_ids():
  store = utils.UnrollStore(3, 2, tf.TensorSpec([], tf.int32))
  with pytest.raises(tf.errors.InvalidArgumentError, match='Duplicate environment ids'):
    store.append(tf.constant([0, 0], tf.int32), tf.constant([1, 2], tf.int32))


def test_unroll_store_emits_exact_sequences_sharing_the_bootstrap_step():
  store = utils.UnrollStore(num_envs=2, unroll_length=3, timestep_specs=tf.TensorSpec([], tf.int32))
  assert store.unroll_specs.shape == [4]
  for step in range(10, 13):
    completed, unrolls = _append(store, [0], tf.constant([step]))
    assert completed == []
    assert unrolls.shape == (0, 4)
  completed, unrolls = _append(store, [0, 1], tf.constant([13, 100]))
  assert completed == [0]
  np.testing.assert_array_equal(unrolls, [[10, 11, 12, 13]])
  for step in range(14, 17):
    completed, unrolls = _append(store, [0], tf.constant([step]))
  assert completed == [0]
  np.testing.assert_array_equal(unrolls, [[13, 14, 15, 16]])

  # A reset (actor restart) drops env 1's partial unroll: it starts over without the shared step.
  store.reset(tf.constant([1]))
  for step in range(200, 203):
    completed, unrolls = _append(store, [1], tf.constant([step]))
    assert completed == []
  completed, unrolls = _append(store, [1], tf.constant([203]))
  assert completed == [1]
  np.testing.assert_array_equal(unrolls, [[200, 201, 202, 203]])


def test_unroll_store_completes_several_envs_in_one_call():
  store = utils.UnrollStore(3, 1, tf.TensorSpec([], tf.float32))
  _append(store, [2, 0, 1], tf.constant([1., 2., 3.]))
  completed, unrolls = _append(store, [1, 2], tf.constant([4., 5.]))
  assert completed == [1, 2]
  np.testing.assert_array_equal(unrolls, [[3., 4.], [1., 5.]])


def test_unroll_store_with_overlap_repeats_burn_in_steps():
  store = utils.UnrollStore(1, unroll_length=2, timestep_specs=tf.TensorSpec([], tf.int32),
                            num_overlapping_steps=2)
  outputs = []
  for step in range(10, 17):
    completed, unrolls = _append(store, [0], tf.constant([step]))
    if completed:
      outputs.append(unrolls[0].tolist())
  assert outputs == [[0, 0, 10, 11, 12], [10, 11, 12, 13, 14], [12, 13, 14, 15, 16]]

  store.reset(tf.constant([0]))
  for step in range(20, 23):
    completed, unrolls = _append(store, [0], tf.constant([step]))
  assert unrolls[0].tolist() == [0, 0, 20, 21, 22]


def test_unroll_store_with_nested_specs():
  Step = collections.namedtuple('Step', 'a b')
  specs = Step(tf.TensorSpec([2], tf.float32), [tf.TensorSpec([], tf.bool)])
  store = utils.UnrollStore(2, 1, specs)
  assert store.unroll_specs.a.shape == [2, 2]
  _append(store, [0], Step(tf.constant([[1., 2.]]), [tf.constant([True])]))
  completed, unrolls = _append(store, [0], Step(tf.constant([[3., 4.]]), [tf.constant([False])]))
  assert completed == [0]
  assert isinstance(unrolls, Step)
  np.testing.assert_array_equal(unrolls.a, [[[1., 2.], [3., 4.]]])
  np.testing.assert_array_equal(unrolls.b[0], [[True, False]])


# ------------------------------------------------------------------------------------------------
# Aggregator


def test_aggregator_add_read_reset_replace():
  agg = utils.Aggregator(4, (tf.TensorSpec([], tf.int64), tf.TensorSpec([2], tf.float32)))
  ids = tf.constant([1, 3])
  agg.add(ids, (tf.constant([5, 7], tf.int64), tf.constant([[1., 2.], [3., 4.]])))
  agg.add(ids, (2, 1.))  # Broadcast over envs and dims.
  state = agg.read(tf.constant([0, 1, 3]))
  # Plain tuples, not tf.Module's wrappers (Keras 3 layers reject those as arguments).
  assert type(state) is tuple  # pylint: disable=unidiomatic-typecheck
  counts, vectors = state
  np.testing.assert_array_equal(counts, [0, 7, 9])
  np.testing.assert_array_equal(vectors, [[0., 0.], [2., 3.], [4., 5.]])
  agg.reset(tf.constant([3]))
  counts, vectors = agg.read(tf.constant([1, 3]))
  np.testing.assert_array_equal(counts, [7, 0])
  agg.replace(tf.constant([0]), (tf.constant([11], tf.int64), tf.constant([[9., 9.]])))
  counts, vectors = agg.read(tf.constant([0]))
  assert counts.numpy().tolist() == [11]
  with pytest.raises(tf.errors.InvalidArgumentError, match='Duplicate environment ids in Aggregator agg_test'):
    agg.replace(tf.constant([2, 2]), (tf.constant([1, 1], tf.int64), tf.zeros([2, 2])),
                debug_op_name='agg_test')


# ------------------------------------------------------------------------------------------------
# Helpers


def test_batch_apply_merges_and_restores_time_and_batch():
  inputs = tf.reshape(tf.range(24, dtype=tf.float32), [2, 3, 4])
  seen = []

  def fn(x):
    seen.append(x.shape.as_list())
    return x * 2, tf.reduce_sum(x, axis=1)

  doubled, sums = utils.batch_apply(fn, (inputs,))
  assert seen == [[6, 4]]
  np.testing.assert_array_equal(doubled, inputs * 2)
  np.testing.assert_array_equal(sums, tf.reduce_sum(inputs, axis=2))


def test_make_time_major_static_dynamic_uint16_and_nests():
  x = np.arange(24).reshape([2, 3, 4]).astype(np.uint16)
  result = utils.make_time_major({'x': x, 'v': [tf.constant([1, 2])]})
  assert result['x'].dtype == tf.uint16
  np.testing.assert_array_equal(result['x'], np.swapaxes(x, 0, 1))
  np.testing.assert_array_equal(result['v'][0], [1, 2])  # Rank 1: untouched.

  @tf.function(input_signature=[tf.TensorSpec([None, 3, None], tf.float32)])
  def dynamic(t):
    out = utils.make_time_major(t)
    assert out.shape.as_list() == [3, None, None]
    return out

  np.testing.assert_array_equal(dynamic(x.astype(np.float32)), np.swapaxes(x, 0, 1))


def test_split_structure_including_zero_prefix():
  nest = (tf.range(5), {'a': tf.reshape(tf.range(10), [5, 2])})
  prefix, suffix = utils.split_structure(nest, 2)
  np.testing.assert_array_equal(prefix[0], [0, 1])
  np.testing.assert_array_equal(suffix[1]['a'], [[4, 5], [6, 7], [8, 9]])
  prefix, suffix = utils.split_structure(nest, 0)
  assert prefix[0].shape == [0] and prefix[1]['a'].shape == [0, 2]
  np.testing.assert_array_equal(suffix[0], range(5))
  prefix, suffix = utils.split_structure(nest[1], 1, axis=1)
  np.testing.assert_array_equal(prefix['a'][:, 0], range(0, 10, 2))


def test_structured_fifo_queue_round_trips_nests_and_blocks_when_full():
  specs = utils.EnvOutput(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.bool),
                          tf.TensorSpec([2], tf.uint8), tf.TensorSpec([], tf.bool),
                          tf.TensorSpec([], tf.int32))
  queue = utils.StructuredFIFOQueue(1, specs)
  item = utils.EnvOutput(1.5, True, np.array([3, 4], np.uint8), False, 7)
  queue.enqueue(tf.nest.map_structure(tf.convert_to_tensor, item))
  assert queue.size() == 1
  blocked = threading.Thread(target=queue.enqueue, args=(item,), daemon=True)
  blocked.start()
  blocked.join(0.3)
  assert blocked.is_alive(), 'enqueue into a full queue must block'
  out = queue.dequeue()
  assert isinstance(out, utils.EnvOutput)
  assert out.episode_step.numpy() == 7 and out.observation.numpy().tolist() == [3, 4]
  blocked.join(10)
  assert not blocked.is_alive() and queue.size() == 1
  many = utils.StructuredFIFOQueue(-1, specs)
  batch = tf.nest.map_structure(lambda s: tf.zeros([3] + s.shape.as_list(), s.dtype), specs)
  many.enqueue_many(batch)
  assert many.dequeue_many(3).observation.shape == [3, 2]
  with pytest.raises((ValueError, TypeError), match='same nested structure'):
    many.enqueue((1., True))


@pytest.mark.parametrize('space_fn, expected', [
    (lambda s: s.Box(0, 255, (84, 84, 1), np.uint8), tf.TensorSpec([84, 84, 1], tf.uint8)),
    (lambda s: s.Discrete(6), tf.TensorSpec([], tf.int64)),
    (lambda s: s.MultiDiscrete([3, 3]), tf.TensorSpec([2], tf.int64)),
    (lambda s: s.Tuple((s.Box(-1, 1, (2,)), s.Box(-1, 1, (3,)))), tf.TensorSpec([5], tf.float32)),
])
def test_tensor_spec_from_gym_space(space_fn, expected):
  import gymnasium
  spec = utils.tensor_spec_from_gym_space(space_fn(gymnasium.spaces), 'obs')
  assert spec.shape == expected.shape and spec.dtype == expected.dtype and spec.name == 'obs'


def test_tensor_spec_from_gym_space_rejects_unsupported_spaces():
  import gymnasium
  with pytest.raises(ValueError, match='1-D'):
    utils.tensor_spec_from_gym_space(gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(2),)))
  with pytest.raises(ValueError, match='no shape and dtype'):
    utils.tensor_spec_from_gym_space(gymnasium.spaces.Dict({'a': gymnasium.spaces.Discrete(2)}))


# ------------------------------------------------------------------------------------------------
# Config


class _Config(object):

  def __init__(self, num_envs, env_batch_size, inference_batch_size):
    self.num_envs = num_envs
    self.env_batch_size = env_batch_size
    self.inference_batch_size = inference_batch_size


def test_validate_learner_config_resolves_auto_batch_size():
  config = _Config(num_envs=10, env_batch_size=1, inference_batch_size=-1)
  utils.validate_learner_config(config)
  assert config.inference_batch_size == 5
  config = _Config(num_envs=8, env_batch_size=4, inference_batch_size=-1)
  utils.validate_learner_config(config)
  assert config.inference_batch_size == 4
  config = _Config(num_envs=16, env_batch_size=2, inference_batch_size=-1)
  utils.validate_learner_config(config, num_hosts=2)
  assert config.inference_batch_size == 4


@pytest.mark.parametrize('config, message', [
    (_Config(0, 1, -1), 'num_envs'),
    (_Config(4, 0, -1), 'env_batch_size'),
    (_Config(4, 1, 0), 'inference_batch_size'),
    (_Config(8, 4, 6), 'exact multiple'),
    (_Config(4, 1, 8), 'bigger than the number of environments'),
])
def test_validate_learner_config_errors(config, message):
  with pytest.raises(ValueError, match=message):
    utils.validate_learner_config(config)


def _flag_values():
  fv = flags.FlagValues()
  flags.DEFINE_integer('num_envs', 4, '', flag_values=fv)
  flags.DEFINE_string('env_name', 'CartPole-v1', '', flag_values=fv)
  flags.DEFINE_float('learning_rate', 1e-3, '', flag_values=fv)
  flags.DEFINE_string('server_address', 'localhost:8686', '', flag_values=fv)
  flags.DEFINE_integer('task', 0, '', flag_values=fv)
  flags.DEFINE_enum('run_mode', None, ['learner', 'actor'], '', flag_values=fv)
  flags.DEFINE_list('levels', ['a'], '', flag_values=fv)
  return fv


class _ConfigClient(object):
  """Stands in for a grpc.Client whose server binds `get_config` (a plain callable)."""

  def __init__(self, serialized):
    self._serialized = serialized

  def get_config(self):
    return np.array(self._serialized.numpy(), dtype=object)


def test_config_transfer_sends_non_default_experiment_flags():
  learner = _flag_values()
  learner(['learner', '--num_envs=16', '--env_name=Acrobot-v1', '--levels=x,y',
           '--server_address=[::]:9000', '--run_mode=learner', '--task=3'])
  payload = json.loads(utils.serialize_config(learner).numpy())
  assert payload == {'num_envs': 16, 'env_name': 'Acrobot-v1', 'levels': ['x', 'y']}

  actor = _flag_values()
  actor(['actor', '--server_address=learner:9000', '--run_mode=actor', '--task=2',
         '--num_envs=3'])
  utils.update_config(actor, _ConfigClient(utils.serialize_config(learner)))
  assert actor.num_envs == 16
  assert actor.env_name == 'Acrobot-v1'
  assert actor.levels == ['x', 'y']
  assert actor.learning_rate == 1e-3
  # Per-process flags stay the actor's own.
  assert actor.server_address == 'learner:9000'
  assert actor.task == 2 and actor.run_mode == 'actor'


def test_update_config_is_a_no_op_without_get_config_and_handles_dicts():
  config = {'a': 1}
  utils.update_config(config, object())
  assert config == {'a': 1}
  utils.update_config(config, _ConfigClient(utils.serialize_config({'a': 2, 'b': [1]})))
  assert config == {'a': 2, 'b': [1]}
  with pytest.raises(TypeError, match='JSON-serializable'):
    utils.serialize_config({'a': object()})


# ------------------------------------------------------------------------------------------------
# TPU encoding (the encode/decode pair runs on CPU too).


def test_tpu_encode_dtypes_and_round_trip():
  rng = np.random.RandomState(0)
  big_uint8 = rng.randint(0, 256, size=[32, 4, 4, 2]).astype(np.uint8)
  nest = {
      'big_uint8': tf.constant(big_uint8),
      'tiny_uint8': tf.constant([[1, 2, 3]], tf.uint8),
      'uint16': tf.constant([65535, 3], tf.uint16),
      'odd_f32': tf.constant(rng.randn(3, 5).astype(np.float32)),
      'ok_f32': tf.constant(rng.randn(8, 128).astype(np.float32)),
      'int': tf.constant([1, 2]),
  }
  encoded = utils.tpu_encode(nest)
  assert isinstance(encoded['big_uint8'], utils.TPUEncodedUInt8)
  assert encoded['big_uint8'].encoded.dtype == tf.uint32
  assert encoded['big_uint8'].encoded.shape == [4, 4, 2, 8]
  assert encoded['tiny_uint8'].dtype == tf.bfloat16
  assert encoded['uint16'].dtype == tf.int32
  assert isinstance(encoded['odd_f32'], utils.TPUEncodedF32)
  assert encoded['ok_f32'].dtype == tf.float32
  decoded = utils.tpu_decode(encoded, nest)
  for key, value in nest.items():
    assert decoded[key].dtype == value.dtype, key
    np.testing.assert_array_equal(decoded[key], value)
  assert utils.tpu_decode(encoded)['uint16'].dtype == tf.int32


def test_tpu_encode_through_tf_data():
  images = tf.constant(np.arange(8 * 64).reshape([8, 64]) % 256, tf.uint8)
  dataset = tf.data.Dataset.from_tensors(images).repeat(2).map(utils.tpu_encode)
  for element in dataset:
    assert isinstance(element, utils.TPUEncodedUInt8)
    np.testing.assert_array_equal(utils.tpu_decode(element), images)


# ------------------------------------------------------------------------------------------------
# ProgressLogger


@pytest.mark.timeout(60)
def test_progress_logger_writes_step_values_and_speed(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  logger = utils.ProgressLogger(writer, initial_period=0.05, starting_step=100)
  callbacks = []
  logger.start(lambda: callbacks.append(1))

  @tf.function
  def train_step(x):
    session = logger.log_session()
    logger.log(session, 'loss', x * 2)
    logger.log(session, 'mean', tf.constant([1., 3.]))
    logger.step_end(session, step_increment=10)

  train_step(tf.constant(1.5))
  assert logger.step_cnt.numpy() == 110
  np.testing.assert_allclose(logger.ready_values.numpy(), [3., 2.])
  deadline = time.time() + 20
  while not callbacks and time.time() < deadline:
    time.sleep(0.02)
  train_step(tf.constant(2.))
  time.sleep(0.3)
  logger.shutdown()
  writer.flush()
  assert callbacks

  scalars = read_scalars(tmp_path)
  assert scalars['loss'][0] == (110, 3.0)
  assert scalars['loss'][-1] == (120, 4.0)
  assert scalars['mean'][0] == (110, 2.0)
  assert scalars['speed/steps_per_sec'] and scalars['speed/steps_per_sec'][0][0] == 120


def test_progress_logger_requires_consistent_sessions():
  logger = utils.ProgressLogger()
  logger.step_end(logger.log_session_from_dict({'a': 1.}))
  with pytest.raises(ValueError, match='same names'):
    logger.step_end(logger.log_session_from_dict({'b': 1.}))


@pytest.mark.timeout(30)
def test_stop_requested_on_signals_sets_the_event_and_restores_handlers():
  import os
  import signal
  before = signal.getsignal(signal.SIGTERM)
  with utils.stop_requested_on_signals() as stop_requested:
    assert not stop_requested.is_set()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop_requested.wait(5)
  assert signal.getsignal(signal.SIGTERM) is before


def _starts_next(store, env_id):
  return bool(store.starts_next_unroll(tf.constant([env_id]))[0])


def test_unroll_store_reports_the_first_step_of_the_next_unroll():
  # unroll_length 3, overlap 1: rows of 5 steps; the next unroll starts at row position 3.
  store = utils.UnrollStore(1, 3, tf.TensorSpec([], tf.int32), num_overlapping_steps=1)
  starts, unrolls = [], []
  for step in range(10, 20):
    starts.append(_starts_next(store, 0))
    completed, unroll = _append(store, [0], tf.constant([step]))
    if completed:
      unrolls.append(unroll[0].tolist())
  assert unrolls == [[0, 10, 11, 12, 13], [12, 13, 14, 15, 16], [15, 16, 17, 18, 19]]
  # The flagged steps are exactly the first steps of the following unrolls: 12, 15, 18.
  assert [step for step, start in zip(range(10, 20), starts) if start] == [12, 15, 18]


def test_unroll_store_next_unroll_start_without_overlap_is_the_completing_step():
  store = utils.UnrollStore(1, 2, tf.TensorSpec([], tf.int32))
  starts = []
  for step in range(6):
    starts.append(_starts_next(store, 0))
    _append(store, [0], tf.constant([step]))
  assert starts == [False, False, True, False, True, False]
