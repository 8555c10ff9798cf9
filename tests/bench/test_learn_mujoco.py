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
       f'--logdir={tmp_path / "run"}'],
      cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert ("mujoco sac on Pendulum-v1: 1 actor(s) x 4 env(s), sac_main's defaults with "
          '--replay_ratio=64.0 --mlp_size=16') in result.stdout, result.stdout
  # sac_main's target entropy for Pendulum's one action dimension.
  learner_log = (tmp_path / 'run' / 'learner.log').read_text()
  assert 'SAC: --target_entropy=-1, minus the action dimension of Pendulum-v1' in learner_log
  assert re.search(r'^\s+\d+ frames,\s+1 episodes: mean return of the last 1 = +-[\d.]+$',
                   result.stdout, re.M), result.stdout
  assert 'target 3000 NOT reached (frame budget spent)' in result.stdout
  rss = float(re.search(r'actor peak RSS (\d+) MB', result.stdout).group(1))
  assert 0 < rss < 300


@pytest.mark.timeout(60)
def test_sac_flags_with_the_ppo_agent_are_refused():
  """They would be dropped: PPO runs with ppo_main's defaults and ppo.gin."""
  result = subprocess.run(
      [sys.executable, '-m', 'bench.learn_mujoco', '--agent=ppo', '--replay_ratio=4',
       '--target_entropy=-1'],
      cwd=ROOT, capture_output=True, text=True, timeout=50, check=False)
  assert result.returncode == 2, result.stderr
  assert ('error: --replay_ratio=4.0 --target_entropy=-1.0: SAC flags, which --agent ppo does '
          'not take') in result.stderr
