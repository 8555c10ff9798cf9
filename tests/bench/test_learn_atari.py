"""bench/learn_atari.py's command line. Its learner, actors and printed curve run in
tests/bench/test_pixel_bandit.py, on the bandit instead of Pong."""

from bench import learn_atari


def test_the_bench_passes_its_setting_to_the_learner(tmp_path):
  flags = learn_atari.learner_flags(learn_atari.parse_args(['--batch_size', '4']), tmp_path)
  assert {'--game=Pong', '--num_envs=16', '--env_batch_size=8', '--batch_size=4',
          '--unroll_length=20', '--learning_rate=0.0006', '--entropy_cost=0.01',
          '--total_environment_frames=10000000', '--adam_epsilon=3.125e-07',
          '--reward_scaling=1.0'} <= set(flags)


def test_the_bench_prints_its_setting():
  args = learn_atari.parse_args(['--lstm_size', '256', '--full_action_space', '--reward_scaling',
                                 '0.1'])
  assert learn_atari.setting(args) == (
      'atari vtrace on Pong, Nature-DQN torso on 4 stacked frames + LSTM 256, all 18 actions, '
      '2 actor(s) x 8 env(s), unroll 20, batch 4, 1 optimizer step(s) per batch, lr 0.0006 '
      '(Adam epsilon 3.125e-07) decaying to 0 over 1e+07 frames, entropy 0.01, rewards scaled '
      'by 0.1')
