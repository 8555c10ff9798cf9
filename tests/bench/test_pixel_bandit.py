"""bench/pixel_bandit.py: the bandit's rules, the Atari V-trace path learning it (pixels and frame
stack) and the PPO path training on it."""

import re
import subprocess
import sys

import numpy as np
import pytest

from bench import pixel_bandit
from tests.processes import ROOT


def _side(frame):
  return 0 if frame[40, 20, 0] == 255 else 1


def test_the_reward_is_for_the_action_naming_the_side_shown():
  env = pixel_bandit.PixelBandit(seed=3)
  frame, _ = env.reset(seed=3)
  sides = []
  for step in range(pixel_bandit.EPISODE_STEPS):
    side = _side(frame)
    assert frame[40, 20 if side == 1 else 64, 0] == 0  # One block, on one side only.
    sides.append(side)
    frame, reward, terminated, truncated, _ = env.step(side)
    assert reward == 1. and not terminated
    assert truncated == (step == pixel_bandit.EPISODE_STEPS - 1)
  assert 0 < np.mean(sides) < 1
  first, _ = env.reset(seed=3)
  assert _side(first) == sides[0]  # The same seed, the same sides.
  for _ in range(10):
    frame, reward, _, _, _ = env.step(1 - _side(frame))
    assert reward == 0.
  assert env.step(5)[1] == 0.


def test_with_a_delay_the_reward_is_for_the_side_shown_that_many_frames_before():
  env = pixel_bandit.PixelBandit(seed=4, answer_delay=2)
  frames = [env.reset()[0]]
  for step in range(pixel_bandit.EPISODE_STEPS):
    answer = _side(frames[-3]) if step >= 2 else None
    # Every action but the answer earns nothing; the first 2 steps have no answer.
    action = 5 if answer is None else answer
    frame, reward, _, truncated, _ = env.step(action)
    assert reward == (0. if answer is None else 1.)
    frames.append(frame)
  assert truncated
  sides = [_side(frame) for frame in frames]
  assert any(a != b for a, b in zip(sides, sides[2:]))  # Answering the current side would fail.
  with pytest.raises(ValueError, match='answer_delay must be non-negative'):
    pixel_bandit.PixelBandit(seed=0, answer_delay=-1)


def test_the_processes_read_their_entry_point_before_absl_parses_the_flags():
  vtrace, ppo = 'seed_rl.environments.atari.vtrace_main', 'seed_rl.environments.atari.ppo_main'
  assert pixel_bandit.ATARI_MAINS == (ppo, vtrace)
  assert pixel_bandit.atari_main_of(['prog', '--run_mode=actor']) == vtrace
  assert pixel_bandit.atari_main_of(['prog', f'--atari_main={ppo}', '--task=0']) == ppo
  assert pixel_bandit.atari_main_of(['prog', '--task=0', '--atari_main', ppo]) == ppo
  with pytest.raises(SystemExit, match='--atari_main must be one of '):
    pixel_bandit.atari_main_of(['prog', '--atari_main=seed_rl.environments.atari.r2d2_main'])


@pytest.mark.timeout(60)
def test_the_command_line_refuses_a_negative_delay_before_starting_anything(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'bench.pixel_bandit', '--answer_delay=-1',
       f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=50, check=False)
  assert result.returncode == 2, result.stderr[-3000:]
  assert '--answer_delay must be non-negative, got -1' in result.stderr
  assert not (tmp_path / 'run').exists()


@pytest.mark.timeout(300)
def test_the_atari_vtrace_path_learns_to_read_the_frames_and_remember_one(tmp_path):
  """The bench's default delay of 1: its answer is on the frame before the current one, so only
  a policy that sees the frame stack the learner keeps for each env between inference calls can
  pass 25 (reached 45 at 58k-70k frames when measured, 40-52 s)."""
  result = subprocess.run(
      [sys.executable, '-m', 'bench.pixel_bandit', '--max_minutes=4',
       f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.startswith('atari vtrace path on the pixel bandit (50 steps, the side '
                                 'shown 1 frame(s) before rewarded'), result.stdout
  assert re.search(r'^\s+\d+ frames,\s+20 episodes: mean return of the last 20 = \d+\.\d\d$',
                   result.stdout, re.M), result.stdout
  assert re.search(r'REACHED mean return > 45 over 20 episodes after \d+ environment frames',
                   result.stdout), result.stdout + result.stderr[-3000:]


@pytest.mark.timeout(300)
def test_the_atari_ppo_path_trains_on_the_bandit(tmp_path):
  """The on-policy learner with the Nature network and whole-unroll minibatches, over two
  training steps (learning the bandit took it 96k frames with delay 0, longer than the suite
  has)."""
  result = subprocess.run(
      [sys.executable, '-m', 'bench.pixel_bandit', '--agent=ppo', '--frame_budget=8192',
       '--max_minutes=4', f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.startswith('atari ppo path on the pixel bandit'), result.stdout
  assert 'NOT reached (frame budget spent): 8192 frames trained on' in result.stdout, result.stdout
  learner_log = (tmp_path / 'run' / 'learner.log').read_text()
  assert 'Training finished at iteration 2 (8192 environment frames)' in learner_log
  # The bindings the bench passes reached the loss.
  assert 'ppo.normalize_advantages = True' in (tmp_path / 'run' / 'learner.gin').read_text()
