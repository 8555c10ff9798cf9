"""Test entry point: a MuJoCo actor that runs a fixed number of steps, then reports whether
TensorFlow was imported and its peak memory."""

import re
import sys

from absl import app

from seed_rl.common import actor
from seed_rl.environments.mujoco import vtrace_main


def main(argv):
  del argv
  actor.actor_loop(vtrace_main.env_flags.create_environment_fn, max_steps=100)
  print('mujoco_loaded', 'mujoco' in sys.modules)
  print('tensorflow_loaded', 'tensorflow' in sys.modules)
  # VmHWM, not getrusage: ru_maxrss survives exec and would count the forking parent.
  with open('/proc/self/status') as f:
    peak_kb = int(re.search(r'VmHWM:\s+(\d+) kB', f.read()).group(1))
  print('peak_rss_mb', peak_kb / 1024)


if __name__ == '__main__':
  app.run(main)
