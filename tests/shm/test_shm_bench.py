"""bench/shm_throughput.py still runs and prints its table (tiny settings: a smoke test)."""

import os
import re
import subprocess
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(240)
def test_shm_throughput_bench_prints_every_transport_and_the_ratios():
  result = subprocess.run(
      [sys.executable, os.path.join(_ROOT, 'bench', 'shm_throughput.py'), '--calls', '50',
       '--repeats', '1'], capture_output=True, text=True, timeout=200, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  for name in ('shm', r'grpc \(unix socket\)', 'raw shm echo'):
    assert re.search(rf'^{name} +\d+\.\d +\d+\.\d +\d+\.\d +\d+\.\d\d +\d+\.\d\d$',
                     result.stdout, re.M), result.stdout
  assert re.search(r'^grpc / shm: wall \d+\.\d\d, client CPU \d+\.\d\d', result.stdout, re.M)
