"""bench/learn_atari.py's command line. Its learner, actors and printed curve run in
tests/bench/test_pixel_bandit.py, on the bandit instead of Pong."""

import subprocess
import sys

import pytest

from bench import learn_atari
from tests.processes import ROOT

ATARI_PPO_GIN = ROOT / 'seed_rl' / 'environments' / 'atari' / 'gin' / 'ppo.gin'


def test_the_v_trace_learner_trains_on_ppos_batches_by_default(tmp_path):
  args = learn_atari.parse_args([])
  flags = learn_atari.learner_flags(args, tmp_path)
  assert not any(flag.startswith('--agent') for flag in flags)
  assert {'--network=nature', '--game=Pong', '--num_envs=16', '--env_batch_size=8',
          '--unroll_length=64', '--batch_size=4', '--batches_per_step=4', '--epochs_per_step=3',
          '--learning_rate=0.00025', '--adam_epsilon=1e-05', '--clip_norm=0.5', '--lambda_=0.95',
          '--popart', '--entropy_cost=0.01', '--total_environment_frames=10000000',
          '--reward_scaling=1.0', '--initialization=orthogonal'} <= set(flags)
  assert ', unroll 64, 4 minibatches of 4 unrolls per step, 3 epochs, lambda 0.95, values ' \
         'normalized (PopArt), lr 0.00025 (Adam epsilon 1e-05)' in learn_atari.setting(args)


def test_the_v_trace_learner_takes_its_entry_points_setting_on_request(tmp_path):
  """The V-trace entry point's way of training (docs/tuning.md), on request: one optimizer
  step per batch of unrolls of 20, values unnormalized."""
  args = learn_atari.parse_args(
      ['--unroll_length', '20', '--batches_per_step', '1', '--epochs_per_step', '1',
       '--learning_rate', '6e-4', '--adam_epsilon', '3.125e-7', '--clip_norm', '0',
       '--lambda_', '1', '--no-popart'])
  assert all(getattr(args, name) == value
             for name, value in learn_atari.VTRACE_ENTRY_POINT_TRAINING.items())
  assert {'--unroll_length=20', '--batches_per_step=1', '--epochs_per_step=1', '--nopopart',
          '--clip_norm=0.0', '--lambda_=1.0'} <= set(learn_atari.learner_flags(args, tmp_path))
  assert (', unroll 20, batch 4, 1 optimizer step(s) per batch, lambda 1, lr 0.0006 (Adam '
          'epsilon 3.125e-07) decaying to 0 over 1e+07 frames, no gradient clipping,'
          ) in learn_atari.setting(args)


@pytest.mark.parametrize('agent, lambda_flag', [
    ('vtrace', '--lambda_=0.9'), ('onpolicy_vtrace', '--gin_bindings=VTrace.lambda_=0.9')])
def test_v_traces_lambda_and_the_clipping_reach_the_learner(agent, lambda_flag, tmp_path):
  args = learn_atari.parse_args(['--agent', agent, '--lambda_', '0.9', '--clip_norm', '2'])
  flags = learn_atari.learner_flags(args, tmp_path)
  assert {lambda_flag, '--clip_norm=2.0'} <= set(flags)
  assert 'lambda 0.9' in learn_atari.setting(args)
  assert 'gradient norm clipped to 2,' in learn_atari.setting(args)


def test_a_caller_replaces_one_agents_defaults():
  agent_defaults = {'vtrace': learn_atari.VTRACE_ENTRY_POINT_TRAINING}
  args = learn_atari.parse_args([], agent_defaults=agent_defaults)
  assert (args.unroll_length, args.batches_per_step, args.popart) == (20, 1, False)
  args = learn_atari.parse_args(['--popart'], agent_defaults=agent_defaults)
  assert args.popart
  args = learn_atari.parse_args(['--agent', 'ppo'], agent_defaults=agent_defaults)
  assert (args.unroll_length, args.batches_per_step) == (64, 4)


def test_the_bench_prints_its_setting():
  args = learn_atari.parse_args(['--full_action_space', '--reward_scaling', '0.1',
                                 '--initialization', 'glorot'])
  assert learn_atari.setting(args) == (
      'atari vtrace on Pong, Nature-DQN torso (glorot initialization) on 4 stacked frames, '
      'all 18 actions, 2 actor(s) x 8 env(s), unroll 64, 4 minibatches of 4 unrolls '
      'per step, 3 epochs, lambda 0.95, values normalized (PopArt), lr 0.00025 (Adam epsilon '
      '1e-05) decaying to 0 over 1e+07 frames, gradient norm clipped to 0.5, entropy 0.01, '
      'rewards scaled by 0.1')


def test_ppo_gets_its_own_defaults_and_passes_its_loss_settings_as_gin_bindings(tmp_path):
  args = learn_atari.parse_args(['--agent', 'ppo', '--learning_rate', '1e-4'])
  flags = learn_atari.learner_flags(args, tmp_path)
  assert {'--unroll_length=64', '--batch_size=4', '--batches_per_step=4',
          '--epochs_per_step=3', '--learning_rate=0.0001', '--batch_mode=shuffle',
          '--gin_bindings=KLPolicyRegularizer.entropy=0.01', '--gin_bindings=ppo.epsilon=0.1',
          '--gin_bindings=tf.keras.optimizers.Adam.epsilon=1e-05'} <= set(flags)
  assert not any(flag.startswith(('--agent', '--network')) for flag in flags)
  assert learn_atari.setting(args).startswith(
      'atari ppo on Pong, Nature-DQN torso (orthogonal initialization) on 4 stacked frames, '
      'minimal action set, 2 actor(s) x 8 env(s), unroll 64, 4 minibatches of 4 unrolls per '
      'step, 3 epochs, clipping 0.1, acting paused during training, lr 0.0001 (Adam epsilon '
      '1e-05)')


def test_the_on_policy_agent_with_v_trace_loss_trains_on_ppo_batches_without_its_clipping(
    tmp_path):
  args = learn_atari.parse_args(['--agent', 'onpolicy_vtrace'])
  flags = learn_atari.learner_flags(args, tmp_path)
  assert {'--unroll_length=64', '--batch_size=4',
          '--batches_per_step=4', '--epochs_per_step=3', '--learning_rate=0.00025',
          '--batch_mode=shuffle', '--clip_norm=0.5',
          '--gin_bindings=GeneralizedOnPolicyLoss.policy_loss=@vtrace()',
          '--gin_bindings=GeneralizedOnPolicyLoss.advantage_estimator=@VTrace()',
          '--gin_bindings=VTrace.lambda_=0.95',
          '--gin_bindings=KLPolicyRegularizer.entropy=0.01'} <= set(flags)
  assert not any('ppo.' in flag for flag in flags)
  assert ('3 epochs, V-trace\'s loss (lambda 0.95), acting paused during training, lr 0.00025'
          in learn_atari.setting(args))
  assert '--block_inference_on_training' in flags


@pytest.mark.parametrize('agent', ['ppo', 'onpolicy_vtrace'])
def test_the_on_policy_agents_act_while_they_train_on_request(agent, tmp_path):
  args = learn_atari.parse_args(['--agent', agent, '--overlap_acting'])
  flags = learn_atari.learner_flags(args, tmp_path)
  assert '--noblock_inference_on_training' in flags
  assert '--block_inference_on_training' not in flags
  assert ', acting overlapping training, lr' in learn_atari.setting(args)


@pytest.mark.parametrize('argv, message', [
    (['--agent', 'onpolicy_vtrace', '--ppo_epsilon', '0.2'], '--ppo_epsilon is for --agent=ppo'),
    (['--agent', 'vtrace', '--ppo_epsilon', '0.1'], '--ppo_epsilon is for --agent=ppo'),
    (['--agent', 'ppo', '--lambda_', '0.9'], '--lambda_ is for --agent=vtrace or onpolicy_vtrace'),
    (['--agent', 'onpolicy_vtrace', '--popart'], '--popart is for --agent=vtrace'),
    (['--agent', 'ppo', '--no-popart'], '--popart is for --agent=vtrace'),
    (['--overlap_acting'], '--overlap_acting is for --agent=ppo or onpolicy_vtrace'),
])
def test_flags_of_the_other_agent_are_refused(argv, message, capsys):
  with pytest.raises(SystemExit):
    learn_atari.parse_args(argv)
  assert message in capsys.readouterr().err


def test_each_agent_runs_the_packages_atari_entry_point():
  assert learn_atari.MODULES == {'vtrace': 'seed_rl.environments.atari.vtrace_main',
                                 'ppo': 'seed_rl.environments.atari.ppo_main',
                                 'onpolicy_vtrace': 'seed_rl.environments.atari.ppo_main'}


@pytest.mark.timeout(120)
@pytest.mark.parametrize('agent', ['vtrace', 'ppo', 'onpolicy_vtrace'])
def test_the_entry_point_accepts_every_flag_the_bench_passes(agent, tmp_path):
  """The flags parse in the agent's entry point, in a process of their own (absl's flags are
  global), with their values; no TensorFlow is imported."""
  flags = learn_atari.learner_flags(learn_atari.parse_args(['--agent', agent]), tmp_path)
  code = ('import sys; from absl import flags; '
          f'import {learn_atari.MODULES[agent]}; '
          'flags.FLAGS(sys.argv); '
          'print(flags.FLAGS.unroll_length, flags.FLAGS.initialization, '
          "'tensorflow' in sys.modules)")
  result = subprocess.run([sys.executable, '-c', code] + flags, cwd=ROOT, capture_output=True,
                          text=True, timeout=100, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split() == ['64', 'orthogonal', 'False']


@pytest.mark.timeout(120)
@pytest.mark.parametrize('agent, loss_name, advantages', [
    ('ppo', 'ppo', 'GAE'), ('onpolicy_vtrace', 'vtrace', 'VTrace')])
def test_the_gin_bindings_build_the_agents_loss(agent, loss_name, advantages, tmp_path):
  import gin  # pylint: disable=g-import-not-at-top
  from seed_rl.agents.policy_gradient import gin_setup  # pylint: disable=g-import-not-at-top
  flags = learn_atari.learner_flags(learn_atari.parse_args(['--agent', agent]), tmp_path)
  gin.clear_config()
  try:
    # ppo_main's default configuration, then the bench's bindings.
    gin_setup.parse_gin(str(ATARI_PPO_GIN), [f.split('=', 1)[1] for f in flags
                                             if f.startswith('--gin_bindings=')])
    reference = gin.query_parameter('GeneralizedOnPolicyLoss.policy_loss')
    loss = reference.scoped_configurable_fn()
    estimator = gin.query_parameter(
        'GeneralizedOnPolicyLoss.advantage_estimator').scoped_configurable_fn()
  finally:
    gin.clear_config()
  assert str(reference) == f'@{loss_name}()'
  assert loss.use_importance_weights
  assert (loss.ppo_epsilon is None) == (agent == 'onpolicy_vtrace')
  assert (loss.advantage_preprocessor is None) == (agent == 'onpolicy_vtrace')
  assert type(estimator).__name__ == advantages and estimator.lambda_ == 0.95
