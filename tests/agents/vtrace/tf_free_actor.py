"""Test entry point: a gym actor that runs a fixed number of steps, then reports whether
TensorFlow was imported and its peak memory."""

import re
import sys

from absl import app

from seed_rl.common import actor
from seed_rl.environments.gym import env
from seed_rl.environments.gym import vtrace_main  # noqa: F401  (defines flags)


def main(argv):
  del argv
  actor.actor_loop(env.create_environment, max_steps=100)
  print('tensorflow_loaded', 'tensorflow' in sys.modules)
  # VmHWM, not getrusage: ru_maxrss survives exec and would count the forking parent (pytest,
  # with TensorFlow loaded).
  with open('/proc/self/status') as f:
    peak_kb = int(re.search(r'VmHWM:\s+(\d+) kB', f.read()).group(1))
  print('peak_rss_mb', peak_kb / 1024)


if __name__ == '__main__':
  app.run(main)
