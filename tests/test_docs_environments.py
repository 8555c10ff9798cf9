"""docs/environments.md against the code: every default in its flag tables is the code's."""

import pytest

from tests.docs_tables import mismatches, module_defaults, section, table_rows

pytestmark = pytest.mark.timeout(120)

PAGE = 'environments.md'

# The entry point whose flags each section's flag table documents.
SECTION_MODULES = {
    '## Gymnasium: any id': 'seed_rl.environments.gym.vtrace_main',
    '## Atari': 'seed_rl.environments.atari.vtrace_main',
    '## MuJoCo and the toy environments': 'seed_rl.environments.mujoco.ppo_main',
    '## Google Research Football': 'seed_rl.environments.football.vtrace_main',
    '## DeepMind Lab': 'seed_rl.environments.dmlab.vtrace_main',
}


@pytest.mark.parametrize('heading', list(SECTION_MODULES))
def test_documented_defaults_are_the_entry_points_defaults(heading):
  rows = table_rows(section(PAGE, heading))
  flag_rows = [row for row in rows if row[0].startswith('`--')]
  assert flag_rows, f'no flag table in {heading}'
  found = mismatches(flag_rows, 1, module_defaults(SECTION_MODULES[heading]))
  assert not found, '\n'.join(found)
