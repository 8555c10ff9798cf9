"""bench/learn_classic_control.py still runs, prints its per-seed lines and draws the curves
(a tiny budget: a smoke test), and finds where a mean of 20 episodes first reaches a level."""

import re
import subprocess
import sys

import numpy as np
import pytest

from bench import learn_classic_control
from tests.processes import ROOT


def test_first_reached_is_the_episode_ending_the_first_window_at_the_threshold():
  returns = np.array([10.] * 20 + [500.] * 19 + [10.] + [500.] * 20)
  frames = np.cumsum(returns)
  # Episodes 19..38 already average 475.5; 40..59 is the first window of 500 only.
  assert learn_classic_control.first_reached(frames, returns, 475.) == 38
  assert learn_classic_control.first_reached(frames, returns, 480.) == 59
  assert learn_classic_control.first_reached(frames[:30], returns[:30], 475.) is None
  assert learn_classic_control.first_reached(frames, returns, 600.) is None


@pytest.mark.timeout(300)
def test_bench_prints_each_seed_and_draws_the_curves(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'bench.learn_classic_control', '--agents=ppo',
       '--envs=CartPole-v1', '--seeds=2', '--frame_budget=4096', '--num_actors=1',
       f'--logdir={tmp_path / "runs"}', f'--plot={tmp_path / "curves.png"}', '--',
       '--epochs_per_step=1'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = re.findall(r'^  seed (\d): NOT reached; mean over the final 100000 frames [\d.]+ '
                     r'\(>= 475: no\); (\d+) frames in \d+ s$', result.stdout, re.M)
  assert [seed for seed, _ in lines] == ['2'], result.stdout
  assert all(4096 <= int(frames) <= 4096 + 512 for _, frames in lines), result.stdout
  assert 'flags --epochs_per_step=1' in result.stdout
  assert (tmp_path / 'curves.png').stat().st_size > 10000
