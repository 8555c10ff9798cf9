"""Tests of bench/inference_bookkeeping.py: the learner's inference function against its policy."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.timeout(180)
def test_the_learner_function_costs_more_than_its_policy_alone():
  # 4 envs in calls of 2; unrolls of 2 steps complete every third call of an env, and the bench
  # keeps taking them off the queue.
  result = subprocess.run(
      [sys.executable, '-m', 'bench.inference_bookkeeping',
       'seed_rl.environments.atari.vtrace_main', '--network=minimal', '--num_envs=4',
       '--env_batch_size=2', '--unroll_length=2', '--batch_size=2', '--game=Pong',
       '--measure_secs=0.3', '--rounds=2'],
      cwd=ROOT, capture_output=True, text=True, timeout=170, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'per inference call of 2 rows' in result.stdout
  cpu = {name: float(ms) for name, ms in re.findall(
      r'(learner inference function|policy and exploration alone): wall [\d.]+ ms, '
      r'CPU ([\d.]+) ms', result.stdout)}
  assert len(cpu) == 2, result.stdout
  # The function runs the same policy and exploration, and the bookkeeping besides.
  assert cpu['learner inference function'] > cpu['policy and exploration alone'] > 0


@pytest.mark.timeout(120)
def test_the_bench_names_its_usage_without_an_entry_point():
  result = subprocess.run([sys.executable, '-m', 'bench.inference_bookkeeping',
                           '--measure_secs=1'], cwd=ROOT, capture_output=True, text=True,
                          timeout=100, check=False)
  assert result.returncode != 0
  assert 'usage: python -m bench.inference_bookkeeping ENTRY_POINT_MODULE' in result.stderr
