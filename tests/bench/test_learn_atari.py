"""bench/learn_atari.py still runs and prints its curve (one Pong episode: a smoke test)."""

import re
import subprocess
import sys

import pytest

from bench import learn_atari
from tests.processes import ROOT


def test_the_bench_passes_its_setting_to_the_learner(tmp_path):
  flags = learn_atari.learner_flags(learn_atari.parse_args(['--batch_size', '4']), tmp_path)
  assert {'--game=Pong', '--num_envs=16', '--env_batch_size=8', '--batch_size=4',
          '--unroll_length=20', '--learning_rate=0.0006', '--entropy_cost=0.01',
          '--total_environment_frames=10000000'} <= set(flags)


@pytest.mark.timeout(300)
def test_learn_atari_bench_stops_at_its_target_and_prints_the_curve(tmp_path):
  # A target any first episode reaches: the bench stops there (a random policy loses Pong
  # 21 to 0 or so in about 4,000 frames).
  result = subprocess.run(
      [sys.executable, '-m', 'bench.learn_atari', '--num_actors=1', '--env_batch_size=1',
       '--batch_size=1', '--frame_budget=100000', '--window=1', '--target=-100',
       '--max_minutes=4', f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^\s+\d+ frames,\s+1 episodes: mean return of the last 1 = -\d+\.00$',
                   result.stdout, re.M), result.stdout
  assert re.search(r'REACHED mean return > -100 over 1 episodes after \d+ environment frames',
                   result.stdout), result.stdout
