"""bench/pixel_bandit.py: the bandit's rules, the Atari V-trace path learning it and the PPO path
training on it."""

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


@pytest.mark.timeout(300)
def test_the_atari_vtrace_path_learns_to_read_the_frames(tmp_path):
  # 25 is the most a policy ignoring the frames gets; the bench stops at its target of 45
  # (reached at 17k frames when measured).
  result = subprocess.run(
      [sys.executable, '-m', 'bench.pixel_bandit', '--max_minutes=4',
       f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.startswith('atari vtrace path on the pixel bandit'), result.stdout
  assert re.search(r'^\s+\d+ frames,\s+20 episodes: mean return of the last 20 = \d+\.\d\d$',
                   result.stdout, re.M), result.stdout
  assert re.search(r'REACHED mean return > 45 over 20 episodes after \d+ environment frames',
                   result.stdout), result.stdout + result.stderr[-3000:]


@pytest.mark.timeout(300)
def test_the_atari_ppo_path_trains_on_the_bandit(tmp_path):
  """The on-policy learner with the Nature network and whole-unroll minibatches, over two
  training steps (learning the bandit takes it about 100k frames, longer than the suite has)."""
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
