"""Tests of the runtime's checkpoints and of the policy every agent exports."""

import re
import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.r2d2 import config as r2d2_config
from seed_rl.agents.r2d2 import learner as r2d2_learner
from seed_rl.agents.r2d2 import networks as r2d2_networks
from seed_rl.agents.sac import config as sac_config
from seed_rl.agents.sac import learner as sac_learner
from seed_rl.agents.sac import networks as sac_networks
from seed_rl.agents.vtrace import config as vtrace_config
from seed_rl.agents.vtrace import learner as vtrace_learner
from seed_rl.agents.vtrace import networks as vtrace_networks
from seed_rl.common import specs
from seed_rl.common.learner_runtime import checkpoints
from seed_rl.common.learner_runtime import runtime
from seed_rl.common.training import update_gate
from seed_rl.environments.gym import env as gym_env
from seed_rl.environments.gym import env_config as gym_env_config

pytestmark = pytest.mark.timeout(120)


def _config(logdir, **overrides):
  values = dict(logdir=str(logdir), init_checkpoint=None, save_checkpoint_secs=3600,
                checkpoints_to_keep=3, fresh_start=False)
  values.update(overrides)
  return types.SimpleNamespace(**values)


class _Model(tf.Module):

  def __init__(self, value):
    super().__init__()
    self.weight = tf.Variable(value)
    self.iterations = tf.Variable(0, dtype=tf.int64)


def _checkpointer(model, config):
  policy = lambda a, e, s: (a, s)
  export = checkpoints.PolicyExport(model, policy, policy, lambda n: tf.zeros([n]),
                                    _export_specs())
  return checkpoints.Checkpointer({'model': model}, export, model.iterations, config)


def _export_specs():
  return types.SimpleNamespace(action=tf.TensorSpec([], tf.int32),
                               env_output=tf.TensorSpec([2], tf.float32),
                               agent_state=tf.TensorSpec([], tf.float32))


def test_checkpoint_continuity_across_restarts(tmp_path):
  first = _Model(1.)
  checkpointer = _checkpointer(first, _config(tmp_path))
  assert (tmp_path / 'checkpoint').exists() is False
  checkpointer.maybe_save()  # A fresh learner saves at once.
  first.weight.assign(5.)
  first.iterations.assign(3)
  checkpointer.save()
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('ckpt-3')
  assert (tmp_path / 'saved_model' / 'saved_model.pb').exists()

  second = _Model(0.)
  resumed = _checkpointer(second, _config(tmp_path))
  assert second.weight.numpy() == 5. and second.iterations.numpy() == 3
  resumed.maybe_save()  # A resumed learner waits a whole period before its next save.
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('ckpt-3')


def test_init_checkpoint_is_used_only_when_the_logdir_has_none(tmp_path):
  source = _Model(7.)
  source.iterations.assign(2)
  _checkpointer(source, _config(tmp_path / 'source')).save()
  init = tf.train.latest_checkpoint(str(tmp_path / 'source'))

  started = _Model(0.)
  _checkpointer(started, _config(tmp_path / 'run', init_checkpoint=init))
  assert started.weight.numpy() == 7.
  started.weight.assign(9.)
  _checkpointer(started, _config(tmp_path / 'run')).save()

  restarted = _Model(0.)
  _checkpointer(restarted, _config(tmp_path / 'run', init_checkpoint=init))
  assert restarted.weight.numpy() == 9.


def test_an_unreadable_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog):
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(tmp_path))
  for iteration, weight in ((1, 2.), (2, 3.)):
    model.weight.assign(weight)
    model.iterations.assign(iteration)
    checkpointer.save()
  latest = tf.train.latest_checkpoint(str(tmp_path))
  data = tf.io.gfile.glob(latest + '.data-*')[0]
  with open(data, 'r+b') as f:  # A copy cut short.
    f.truncate(4)

  restored = _Model(0.)
  caplog.set_level('INFO')
  assert _checkpointer(restored, _config(tmp_path)).latest_checkpoint == f'{tmp_path}/ckpt-1'
  assert restored.weight.numpy() == 2. and restored.iterations.numpy() == 1
  warnings = [r.getMessage() for r in caplog.records if 'cannot be restored' in r.getMessage()]
  assert len(warnings) == 1 and latest in warnings[0] and '\n' not in warnings[0]


def test_checkpoints_to_keep_keeps_that_many(tmp_path):
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(tmp_path, checkpoints_to_keep=2))
  for iteration in range(1, 5):
    model.iterations.assign(iteration)
    checkpointer.save()
  kept = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
  assert [path.rsplit('-', 1)[1] for path in kept] == ['3', '4']


def _save_at(checkpointer, model, iteration, weight):
  model.weight.assign(weight)
  model.iterations.assign(iteration)
  return checkpointer.save()


def _truncate_data_files(prefix):
  for path in tf.io.gfile.glob(prefix + '.data-*'):
    with open(path, 'r+b') as f:  # A copy cut short, a disk that filled up.
      f.truncate(4)


def _contents(directory):
  """{file name: bytes} of the files directly in `directory`."""
  return {path.name: path.read_bytes() for path in directory.iterdir() if path.is_file()}


def _unreadable_logdir(tmp_path):
  """A logdir whose two checkpoints are both truncated; returns it and its files' contents."""
  logdir = tmp_path / 'logdir'
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(logdir))
  for iteration in (1, 2):
    _truncate_data_files(_save_at(checkpointer, model, iteration, 2. * iteration))
  return logdir, {name: data for name, data in _contents(logdir).items()}


def test_unreadable_checkpoints_stop_the_learner_and_stay_untouched(tmp_path):
  logdir, before = _unreadable_logdir(tmp_path)
  with pytest.raises(checkpoints.UnreadableCheckpointsError) as raised:
    _checkpointer(_Model(0.), _config(logdir))
  message = str(raised.value)
  for name in ('ckpt-1.index', 'ckpt-2.data-00000-of-00001', 'checkpoint', str(logdir),
               '--fresh_start', 'unreadable_checkpoints_', 'move them out of the logdir'):
    assert name in message, message
  assert _contents(logdir) == before


def test_fresh_start_moves_unreadable_checkpoints_aside_and_starts_from_scratch(tmp_path):
  logdir, before = _unreadable_logdir(tmp_path)
  model = _Model(0.)
  checkpointer = _checkpointer(model, _config(logdir, fresh_start=True))
  assert model.weight.numpy() == 0. and model.iterations.numpy() == 0
  assert checkpointer.latest_checkpoint is None
  [moved] = list(logdir.glob('unreadable_checkpoints_*'))
  assert _contents(moved) == before  # Every file, byte for byte.
  assert not list(logdir.glob('ckpt-*')) and not (logdir / 'checkpoint').exists()
  assert _save_at(checkpointer, model, 1, 3.).endswith('ckpt-1')
  assert tf.train.latest_checkpoint(str(logdir)).endswith('ckpt-1')


class _LargerModel(_Model):

  def __init__(self, value):
    super().__init__(value)
    self.bias = tf.Variable([0., 0.])


def test_fresh_start_undoes_a_restore_that_failed_halfway(tmp_path):
  model = _Model(1.)
  _save_at(_checkpointer(model, _config(tmp_path)), model, 3, 5.)
  # The checkpoint reads back whole but lacks `bias`: its restore assigns `weight`, then fails.
  larger = _LargerModel(0.)
  with pytest.raises(checkpoints.UnreadableCheckpointsError,
                     match='not bound to checkpointed values'):
    _checkpointer(larger, _config(tmp_path))
  assert larger.weight.numpy() == 5.  # What the failed restore left.
  larger = _LargerModel(0.)
  _checkpointer(larger, _config(tmp_path, fresh_start=True))
  assert larger.weight.numpy() == 0. and larger.iterations.numpy() == 0


@pytest.mark.parametrize('garbage', [b'\xff\xfe\x00garbage', b'no state at all'])
def test_an_unreadable_state_file_is_named_and_the_files_are_listed(tmp_path, garbage):
  logdir = tmp_path / 'logdir'
  logdir.mkdir()
  (logdir / 'checkpoint').write_bytes(garbage)
  with pytest.raises(checkpoints.UnreadableCheckpointsError,
                     match=f'checkpoint state file {re.escape(str(logdir))}/checkpoint cannot be '
                     'read'):
    _checkpointer(_Model(0.), _config(logdir))
  assert (logdir / 'checkpoint').read_bytes() == garbage

  # Readable checkpoints beside it are found by their files; the newest is restored.
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(tmp_path / 'other'))
  for iteration in (4, 5):
    _save_at(checkpointer, model, iteration, float(iteration))
  for path in (tmp_path / 'other').glob('ckpt-*'):
    path.rename(logdir / path.name)
  restored = _Model(0.)
  resumed = _checkpointer(restored, _config(logdir))
  assert restored.weight.numpy() == 5. and resumed.latest_checkpoint.endswith('ckpt-5')


class _CorruptingCheckpointer(checkpoints.Checkpointer):
  """Writes checkpoints that a faulty disk cuts short after the write succeeded."""

  def _write(self, prefix):
    super()._write(prefix)
    _truncate_data_files(prefix)


def test_a_checkpoint_that_fails_verification_deletes_no_older_one(tmp_path, caplog):
  config = _config(tmp_path, checkpoints_to_keep=1)
  model = _Model(1.)
  _save_at(_checkpointer(model, config), model, 1, 2.)
  policy = lambda a, e, s: (a, s)
  corrupting = _CorruptingCheckpointer(
      {'model': model},
      checkpoints.PolicyExport(model, policy, policy, lambda n: tf.zeros([n]), _export_specs()),
      model.iterations, config)
  caplog.set_level('INFO')
  assert _save_at(corrupting, model, 2, 3.) is None
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('ckpt-1')
  assert not list(tmp_path.glob('ckpt-2*')) and not list(tmp_path.glob('ckpt_being_written*'))
  assert corrupting.latest_checkpoint.endswith('ckpt-1')
  errors = [r.getMessage() for r in caplog.records if r.levelname == 'ERROR']
  assert len(errors) == 1 and f'Cannot save checkpoint {tmp_path}/ckpt-2' in errors[0], errors
  restored = _Model(0.)
  _checkpointer(restored, config)
  assert restored.weight.numpy() == 2. and restored.iterations.numpy() == 1


def test_a_failed_save_keeps_the_older_checkpoints_and_names_the_path(tmp_path, caplog):
  model = _Model(1.)
  checkpointer = _checkpointer(model, _config(tmp_path, checkpoints_to_keep=1))
  _save_at(checkpointer, model, 1, 2.)
  exported = _contents(tmp_path / 'saved_model')
  # A file where the write needs a folder fails it, as a full or read-only disk would.
  (tmp_path / 'ckpt_being_written_temp').write_text('in the way')
  caplog.set_level('INFO')
  assert _save_at(checkpointer, model, 2, 3.) is None
  errors = [r.getMessage() for r in caplog.records if r.levelname == 'ERROR']
  assert len(errors) == 1 and f'Cannot save checkpoint {tmp_path}/ckpt-2' in errors[0], errors
  assert 'the earlier checkpoints are kept' in errors[0] and '\n' not in errors[0]
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('ckpt-1')
  assert _contents(tmp_path / 'saved_model') == exported
  # Once the disk is fixed the next save goes through and rotates.
  (tmp_path / 'ckpt_being_written_temp').unlink()
  assert _save_at(checkpointer, model, 3, 4.).endswith('ckpt-3')
  assert not list(tmp_path.glob('ckpt-1*'))


class _Normalizer(tf.Module):

  def __init__(self):
    super().__init__()
    self.mean = tf.Variable([0., 0.])


class _NormalizedNetwork(tf.keras.Model):
  """A Keras network holding a `tf.Module` of statistics, as the on-policy agent's does: the
  statistics are in its checkpoint but not in its Keras `variables`."""

  def __init__(self):
    super().__init__(name='normalized_network')
    self.normalizer = _Normalizer()
    self.dense = tf.keras.layers.Dense(2)
    self.iterations = tf.Variable(0, dtype=tf.int64)

  def call(self, x):
    return self.dense(x - self.normalizer.mean)


def _normalized_network():
  network = _NormalizedNetwork()
  network(tf.zeros([1, 2]))
  return network


@pytest.mark.parametrize('make_model,variable,name', [
    (lambda: _Model(1.), lambda model: model.weight, 'model/weight'),
    (_normalized_network, lambda model: model.normalizer.mean, 'model/normalizer/mean')])
def test_a_non_finite_variable_is_never_saved(tmp_path, caplog, make_model, variable, name):
  model = make_model()
  checkpointer = _checkpointer(model, _config(tmp_path))
  checkpointer.save()

  def files():
    return {str(path.relative_to(tmp_path)): path.read_bytes() for path in tmp_path.rglob('*')
            if path.is_file()}

  saved = files()
  caplog.set_level('INFO')
  variable(model).assign(np.full(variable(model).shape, np.nan, np.float32))
  for iteration in (2, 3):
    model.iterations.assign(iteration)
    assert checkpointer.save() is None
  assert checkpointer.refused_saves == 2 and files() == saved
  # Counted where the learner's progress line finds refused updates.
  assert update_gate.refused_counts()['refused checkpoint saves'] >= 2
  errors = [r.getMessage() for r in caplog.records if r.levelname == 'ERROR']
  # Rate-limited: the second refusal within minutes logs nothing.
  assert len(errors) == 1 and f': {name} is not finite' in errors[0], errors
  assert 'ckpt-0' in errors[0] and 'Not saving the checkpoint of iteration 2' in errors[0]


def _cartpole_agent(agent):
  config = gym_env_config.GymConfig(env_name='CartPole-v1')
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  return runtime.create_agent(agent, gym_env.create_environment, strategy, config)


def _vtrace_agent():
  config = vtrace_config.VTraceConfig(entropy_cost=0.01, entropy_cost_adjustment_speed=10.)
  return vtrace_learner.VTraceAgent(
      lambda unused_action_space, unused_observation_space, dist: vtrace_networks.MLPandLSTM(
          dist, mlp_sizes=[8], lstm_sizes=[4]), config)


def _r2d2_agent():
  config = r2d2_config.R2D2Config(burn_in=2, n_steps=3)
  return r2d2_learner.R2D2Agent(
      lambda unused_specs, num_actions: r2d2_networks.RecurrentQNetwork(num_actions, [8], 4),
      config)


def _sac_agent():
  config = sac_config.SACConfig(entropy_cost=0.01)
  return sac_learner.SACAgent(
      lambda unused_action_space, unused_observation_space, dist: sac_networks.ActorCriticMLP(
          dist, n_critics=2, mlp_sizes=[8]), gym_env.create_environment, config)


@pytest.mark.parametrize('make_agent', [_vtrace_agent, _r2d2_agent, _sac_agent])
def test_every_agent_exports_a_policy_that_runs_without_the_learner(tmp_path, make_agent):
  agent = make_agent()
  agent_specs = _cartpole_agent(agent)
  export = checkpoints.PolicyExport(agent.network, agent.policy, agent.greedy_policy,
                                    agent.initial_state, agent_specs)
  tf.saved_model.save(export, str(tmp_path / 'saved_model'))
  loaded = tf.saved_model.load(str(tmp_path / 'saved_model'))

  batch = 3
  env_outputs = specs.zeros_for(agent_specs.env_output, batch)
  env_outputs = env_outputs._replace(
      observation=tf.constant(np.random.RandomState(0).randn(batch, 4), tf.float32))
  prev_actions = tf.constant([0, 1, 0], agent_specs.action.dtype)
  state = loaded.initial_state(batch)
  outputs, new_state = loaded.get_action(prev_actions, env_outputs, state)
  expected_outputs, expected_state = agent.policy(prev_actions, env_outputs,
                                                  agent.initial_state(batch))
  assert outputs[0].shape == [batch] and outputs[0].dtype == agent_specs.action.dtype
  assert np.all((outputs[0].numpy() >= 0) & (outputs[0].numpy() < 2))
  # Everything but the (sampled) V-trace and SAC action is deterministic.
  for got, expected in zip(tf.nest.flatten((outputs[1:], new_state)),
                           tf.nest.flatten((expected_outputs[1:], expected_state))):
    np.testing.assert_allclose(got, expected, rtol=1e-5)
  assert gymnasium.spaces.Discrete(2).contains(int(outputs[0][0]))
  # The greedy policy is deterministic, action included, and the same as the agent's.
  greedy, _ = loaded.get_greedy_action(prev_actions, env_outputs, state)
  expected_greedy, _ = agent.greedy_policy(prev_actions, env_outputs, agent.initial_state(batch))
  for got, expected in zip(tf.nest.flatten(greedy), tf.nest.flatten(expected_greedy)):
    np.testing.assert_allclose(got, expected, rtol=1e-5)
