"""Actors never import TensorFlow: the client, its errors and `from seed_rl import grpc`."""

import pathlib
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from seed_rl.grpc import errors

REPO = pathlib.Path(__file__).resolve().parents[2]

ACTOR = textwrap.dedent('''
    import collections, sys
    import numpy as np
    from seed_rl import grpc
    EnvOutput = collections.namedtuple('EnvOutput', 'reward done observation')
    address = sys.argv[1]
    with grpc.Client(address, timeout=30) as client:
      out = client.inference(np.arange(2, dtype=np.int32),
                             EnvOutput(np.float32([1, 2]), np.array([True, False]),
                                       np.zeros([2, 3], np.uint8)))
      assert type(out).__name__ == 'AgentOutput', out
      assert out.action.tolist() == [0, 1] and out.extra['value'].tolist() == [1.0, 2.0]
      try:
        client.inference(1, 2, 3)
      except grpc.InvalidArgumentError as e:
        assert type(e) is grpc.errors.InvalidArgumentError
        assert e.code == 3 and e.error_code == 3
        assert 'Expects 4 arguments, but 3 is provided' in e.message, e.message
      else:
        raise AssertionError('no error')
      assert not hasattr(client, 'update_config')
    # No server at all, and a server that finished (the learner's end of training).
    for address, timeout, error in [('unix:/nonexistent/socket', 0.3, grpc.UnavailableError),
                                    (sys.argv[2], 30, grpc.TrainingFinishedError)]:
      try:
        grpc.Client(address, timeout=timeout)
      except error as e:
        assert type(e) is getattr(grpc.errors, error.__name__), repr(e)
        assert e.code == error.code, repr(e)
      else:
        raise AssertionError(f'no {error.__name__}')
    assert 'tensorflow' not in sys.modules, 'the client imported TensorFlow'
    print('ACTOR OK')
''')


@pytest.mark.timeout(120)
def test_client_never_imports_tensorflow(servers, unix_address, sock_dir):
  agent_output = __import__('collections').namedtuple('AgentOutput', 'action extra')
  signature = [tf.TensorSpec([2], tf.int32),
               (tf.TensorSpec([2], tf.float32), tf.TensorSpec([2], tf.bool),
                tf.TensorSpec([2, 3], tf.uint8))]

  @tf.function(input_signature=signature)
  def inference(env_ids, env_output):
    return agent_output(action=env_ids, extra={'value': env_output[0]})

  finished = servers([f'unix:{sock_dir}/finished.sock'])
  finished.finish()
  finished.start()
  _serve_and_run_actor(servers, unix_address, [inference], ACTOR, f'unix:{sock_dir}/finished.sock')


def _serve_and_run_actor(servers, address, fns, actor_script, *script_args):
  """Serves `fns` on `address` and runs `actor_script` against it in a fresh interpreter, with
  the address and `script_args` as its arguments."""
  server = servers([address])
  for fn in fns:
    server.bind(fn)
  server.start()
  result = subprocess.run([sys.executable, '-c', actor_script, address, *script_args], cwd=REPO,
                          capture_output=True, text=True, timeout=100)
  assert result.returncode == 0, result.stderr
  assert 'ACTOR OK' in result.stdout


@pytest.mark.timeout(60)
def test_import_alone_is_tf_free():
  code = ('import sys\nfrom seed_rl import grpc\nfrom seed_rl.grpc import client, codec, errors, '
          'security, batching\nassert "tensorflow" not in sys.modules\n'
          'assert callable(grpc.Client)\nprint("OK")')
  result = subprocess.run([sys.executable, '-c', code], cwd=REPO, capture_output=True,
                          text=True, timeout=50)
  assert result.returncode == 0, result.stderr


@pytest.mark.timeout(30)
def test_server_is_loaded_lazily():
  from seed_rl import grpc  # pylint: disable=g-import-not-at-top
  from seed_rl.grpc import server  # pylint: disable=g-import-not-at-top
  assert grpc.Server is server.Server
  with pytest.raises(AttributeError):
    grpc.NoSuchThing  # pylint: disable=pointless-statement


@pytest.mark.timeout(30)
def test_errors_module():
  e = errors.make_error(errors.UNAVAILABLE, 'gone')
  assert isinstance(e, tf.errors.UnavailableError)  # TensorFlow is loaded in this process.
  assert e.message == 'gone'
  ours = errors.UnavailableError('gone')
  assert ours.code == 14 and ours.error_code == 14 and str(ours) == 'gone'
  assert set(errors.error_classes(errors.UNAVAILABLE)) == {errors.UnavailableError,
                                                           tf.errors.UnavailableError}
  for code, cls in errors.CLASS_BY_CODE.items():
    assert getattr(tf.errors, cls.__name__).__name__ == cls.__name__
    assert getattr(tf.errors, cls.__name__)(None, None, '').error_code == code
  assert isinstance(errors.make_error(99, 'x'), tf.errors.UnknownError)


BFLOAT16_ACTOR = textwrap.dedent('''
    import sys
    import numpy as np
    from seed_rl import grpc
    assert 'ml_dtypes' not in sys.modules, 'importing the client loaded ml_dtypes'
    with grpc.Client(sys.argv[1], timeout=30) as client:
      assert client.plus_one(np.float32([1, 2])).tolist() == [2, 3]
      assert 'ml_dtypes' not in sys.modules, 'a float32 call loaded ml_dtypes'
      halves = client.to_bfloat16(np.float32([3, 5]))  # A bfloat16 response: decoded.
      assert halves.dtype.name == 'bfloat16' and halves.tolist() == [1.5, 2.5], halves
      doubled = client.double(halves)  # A bfloat16 request: encoded.
      assert doubled.dtype.name == 'bfloat16' and doubled.tolist() == [3, 5], doubled
    assert 'tensorflow' not in sys.modules
    print('ACTOR OK')
''')


@pytest.mark.timeout(120)
def test_ml_dtypes_is_loaded_by_an_actor_only_when_a_bfloat16_value_comes(servers, unix_address,
                                                                          monkeypatch):
  # As in a learner, which imports the codec before TensorFlow: bfloat16 is not in its tables
  # until binding a function that uses it adds it.
  from seed_rl.grpc import codec  # pylint: disable=g-import-not-at-top
  bfloat16_code = tf.bfloat16.as_datatype_enum
  for table, key in [(codec.DTYPE_BY_CODE, bfloat16_code),
                     (codec.WIRE_DTYPE_BY_CODE, bfloat16_code),
                     (codec.CODE_BY_DTYPE, tf.bfloat16.as_numpy_dtype)]:
    monkeypatch.delitem(table, key, raising=False)

  @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
  def plus_one(x):
    return x + 1

  @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
  def to_bfloat16(x):
    return tf.cast(x / 2, tf.bfloat16)

  @tf.function(input_signature=[tf.TensorSpec([2], tf.bfloat16)])
  def double(x):
    return x * 2

  _serve_and_run_actor(servers, unix_address, [plus_one, to_bfloat16, double], BFLOAT16_ACTOR)
