"""Agents' flag modules load together in one process; the one imported last sets shared defaults."""

import subprocess
import sys

import pytest

from tests.processes import ROOT

pytestmark = pytest.mark.timeout(120)

_PROGRAM = '''
from absl import flags
from seed_rl.agents.{first} import learner_flags
from seed_rl.agents.{second} import learner_flags
FLAGS = flags.FLAGS
FLAGS(['program'])
print(FLAGS.batch_size, FLAGS.unroll_queue_max_size, FLAGS.discounting, FLAGS.entropy_cost,
      FLAGS['burn_in'].value if 'burn_in' in FLAGS else None)
'''


@pytest.mark.parametrize('first, second, expected', [
    ('vtrace', 'r2d2', '64 100 0.997 0.00025 40'),
    ('r2d2', 'vtrace', '32 1 0.99 0.00025 40'),
    ('vtrace', 'sac', '256 100 0.99 0.01 None'),
    ('sac', 'vtrace', '32 1 0.99 0.00025 None'),
])
def test_both_learner_flag_modules_import_together(first, second, expected):
  result = subprocess.run([sys.executable, '-c', _PROGRAM.format(first=first, second=second)],
                          cwd=ROOT, capture_output=True, text=True, timeout=100)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.split() == expected.split()
