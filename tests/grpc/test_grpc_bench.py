"""bench/grpc_throughput.py still runs and prints its table (tiny settings: a smoke test)."""

import os
import re
import subprocess
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(240)
def test_grpc_throughput_bench_prints_all_three_rates():
  result = subprocess.run(
      [sys.executable, os.path.join(_ROOT, 'bench', 'grpc_throughput.py'), '--seconds', '0.3',
       '--clients', '2', '--env_batch_sizes', '1'],
      capture_output=True, text=True, timeout=200, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  row = [line for line in result.stdout.splitlines() if line.startswith('| 2 | 1 |')]
  assert len(row) == 1, result.stdout
  cells = [c.strip() for c in row[0].strip('|').split('|')]
  k, env_batch_size, batch, raw, raw_fn, seed, vs_raw, vs_raw_fn, fn_us = cells
  assert (k, env_batch_size, batch) == ('2', '1', '1')
  assert float(raw) > 0 and float(raw_fn) > 0 and float(seed) > 0 and float(fn_us) > 0
  assert re.fullmatch(r'\d+\.\d\d', vs_raw) and re.fullmatch(r'\d+\.\d\d', vs_raw_fn)
