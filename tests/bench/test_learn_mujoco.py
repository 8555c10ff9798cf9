"""bench/learn_mujoco.py still runs and prints its curve (a tiny budget on Pendulum: a smoke test)."""

import re
import subprocess
import sys

import pytest

from tests.processes import ROOT


@pytest.mark.timeout(300)
def test_learn_mujoco_bench_prints_the_curve_and_the_actors_memory(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'bench.learn_mujoco', '--env_name=Pendulum-v1',
       '--frame_budget=800', '--mlp_size=16', '--replay_ratio=64', '--window=1',
       '--target_entropy=-1', f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^\s+\d+ frames,\s+1 episodes: mean return of the last 1 = +-[\d.]+$',
                   result.stdout, re.M), result.stdout
  assert 'target 3000 NOT reached (frame budget spent)' in result.stdout
  rss = float(re.search(r'actor peak RSS (\d+) MB', result.stdout).group(1))
  assert 0 < rss < 300
