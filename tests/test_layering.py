"""The package's layering holds: shm -> grpc -> common -> agents -> environments -> launch and
tools, no loops; `seed_rl/common` is grouped by job.

A module may import seed_rl modules of its own layer or of a lower one only; the flag modules
of the agents are the way environments' entry points reach the agents. No agent package imports
another: what two agents share lives in `common`. The top layer holds `seed_rl.launch` (the
operator's command-line tools, which import no TensorFlow) and the tools directly in `seed_rl`
(`evaluate`, `plot`), which may use everything. `seed_rl/common` keeps the original's public
modules at its root and groups the rest in subpackages that say what they hold.
"""

import ast
import pathlib

import pytest

from tests import processes

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / 'seed_rl'
LAYERS = ['shm', 'grpc', 'common', 'agents', 'environments']
# Modules at the root of `seed_rl/common` (the original's public ones and a few shared by all).
MAX_COMMON_ROOT_MODULES = 12

pytestmark = pytest.mark.timeout(60)


def _layer(module: str) -> int:
  parts = module.split('.')
  return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def _imports(path: pathlib.Path):
  """Every seed_rl module that `path` imports, at any depth of the file."""
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      names = [node.module] + [f'{node.module}.{alias.name}' for alias in node.names]
    else:
      continue
    yield from (name for name in names if name.startswith('seed_rl.'))


def _module_name(path: pathlib.Path) -> str:
  parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
  return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def test_no_module_imports_a_higher_layer():
  violations = []
  for path in sorted(PACKAGE.rglob('*.py')):
    module = _module_name(path)
    for imported in _imports(path):
      if _layer(imported) > _layer(module):
        violations.append(f'{module} imports {imported}')
  assert not violations


def _agent(module: str) -> str | None:
  """The agent package of `module` (`seed_rl.agents.<agent>...`), None outside one."""
  parts = module.split('.')
  return parts[2] if len(parts) > 2 and parts[:2] == ['seed_rl', 'agents'] else None


def test_no_agent_imports_another_agent():
  violations = []
  for path in sorted((PACKAGE / 'agents').rglob('*.py')):
    module = _module_name(path)
    for imported in _imports(path):
      if _agent(imported) not in (None, _agent(module)):
        violations.append(f'{module} imports {imported}')
  assert not violations


def test_agent_check_tells_agents_apart():
  assert _agent('seed_rl.agents.vtrace.learner') == 'vtrace'
  assert _agent('seed_rl.agents.policy_gradient.modules.popart') == 'policy_gradient'
  assert _agent('seed_rl.agents') is None
  assert _agent('seed_rl.common.training.popart') is None


def test_layer_check_sees_imports_inside_functions(tmp_path):
  path = tmp_path / 'module.py'
  path.write_text('def f():\n  from seed_rl.agents.vtrace import networks\n')
  assert list(_imports(path)) == ['seed_rl.agents.vtrace', 'seed_rl.agents.vtrace.networks']
  assert _layer('seed_rl.agents.vtrace') > _layer('seed_rl.common.actor')
  assert _layer('seed_rl.evaluate') > _layer('seed_rl.environments.gym.env')
  assert _layer('seed_rl.launch.local_run') == _layer('seed_rl.evaluate')


def test_common_root_holds_few_modules():
  modules = sorted(path.stem for path in (PACKAGE / 'common').glob('*.py')
                   if path.name != '__init__.py')
  assert len(modules) <= MAX_COMMON_ROOT_MODULES, modules


@pytest.mark.parametrize('package', ['common', 'launch'])
def test_every_package_of_common_and_launch_says_what_it_holds(package):
  inits = sorted((PACKAGE / package).rglob('__init__.py'))
  assert inits
  missing = [str(init.parent.relative_to(PACKAGE)) for init in inits
             if not ast.get_docstring(ast.parse(init.read_text()))]
  assert not missing


def test_launch_modules_import_no_tensorflow():
  modules = [_module_name(path) for path in sorted((PACKAGE / 'launch').rglob('*.py'))]
  result = processes.import_without_tensorflow(modules)
  assert result.returncode == 0, result.stderr[-2000:]
