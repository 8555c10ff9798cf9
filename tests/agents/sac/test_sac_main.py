"""mujoco.sac_main's target entropy: minus the action dimension of a Box action space, unless
given; a fixed entropy cost for other spaces. In a child process: importing the entry point sets
its flag defaults in absl's FLAGS, which this process's other tests read."""

import subprocess
import sys

import pytest

from tests.processes import ROOT

_CHECK = """
from absl import flags
from absl import logging
import gymnasium
from seed_rl.environments.mujoco import sac_main

spaces = gymnasium.spaces
print('spaces', sac_main.target_entropy_of(spaces.Box(-1, 1, (6,))),
      sac_main.target_entropy_of(spaces.Box(-1, 1, (2, 3))),
      sac_main.target_entropy_of(spaces.Discrete(10)),
      sac_main.target_entropy_of(spaces.MultiDiscrete([11, 11])))
print('default', flags.FLAGS['target_entropy'].default)
logged = []
logging.info = lambda message, *args: logged.append(message % args)
for argv in ([], ['--env_name=Hopper-v5'], ['--env_name=Pendulum-v1'], ['--env_name=bit_flip'],
             ['--target_entropy=0.5']):
  flags.FLAGS.unparse_flags()
  flags.FLAGS(['sac_main'] + argv)
  logged.clear()
  sac_main.set_target_entropy()
  print(argv, flags.FLAGS.target_entropy, len(logged), logged[0] if logged else '')
"""


@pytest.mark.timeout(120)
def test_the_target_entropy_follows_the_action_space_unless_given():
  result = subprocess.run([sys.executable, '-c', _CHECK], cwd=ROOT, capture_output=True,
                          text=True, timeout=110, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert lines[:2] == ['spaces -6.0 -6.0 None None', 'default None']
  assert lines[2].startswith('[] -6.0 1 SAC: --target_entropy=-6, minus the action dimension '
                             'of HalfCheetah-v5'), lines[2]
  assert lines[3].startswith("['--env_name=Hopper-v5'] -3.0 1 SAC: --target_entropy=-3"), lines
  assert lines[4].startswith("['--env_name=Pendulum-v1'] -1.0 1 SAC: --target_entropy=-1"), lines
  assert lines[5].startswith("['--env_name=bit_flip'] None 1 SAC: no --target_entropy for the "
                             'action space Discrete'), lines[5]
  assert 'the entropy cost stays 0.1' in lines[5]
  assert lines[6] == "['--target_entropy=0.5'] 0.5 0 ", lines[6]
