"""No import circle among the modules of `seed_rl/` and `bench/`.

A circle means neither module can be read, tested or moved without the other; the order in which
Python happens to import them decides whether names exist yet. Imports inside functions count too:
they only postpone the circle.

The graph links a module to each module of these trees it names: `import a.b.c` and
`from a.b import c` link to `a.b.c` when that is a module, else to the nearest enclosing module
(`from a.b import name` links to `a.b`); relative imports are resolved against the importing
package. Parent packages' `__init__` are not linked implicitly.
"""

import ast
import pathlib
from collections.abc import Iterable, Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TREES = ('seed_rl', 'bench')

pytestmark = pytest.mark.timeout(60)


def module_paths(root: pathlib.Path, trees: Iterable[str]) -> dict[str, pathlib.Path]:
  """Dotted module name -> file, for every `.py` file under `root/<tree>` for each tree."""
  modules = {}
  for tree in trees:
    for path in sorted((root / tree).rglob('*.py')):
      parts = path.relative_to(root).with_suffix('').parts
      modules['.'.join(parts[:-1] if parts[-1] == '__init__' else parts)] = path
  return modules


def _nearest_module(name: str, modules: dict[str, pathlib.Path]) -> str | None:
  """`name` or its nearest enclosing name that is one of `modules`, or None."""
  while name and name not in modules:
    name = name.rpartition('.')[0]
  return name or None


def imported_modules(module: str, path: pathlib.Path,
                     modules: dict[str, pathlib.Path]) -> Iterator[str]:
  """The modules among `modules` that `module` (read from `path`) imports, at any depth."""
  package = module if path.name == '__init__.py' else module.rpartition('.')[0]
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = package
      for _ in range(max(node.level - 1, 0)):
        base = base.rpartition('.')[0]
      if node.level:
        source = f'{base}.{node.module}' if node.module else base
      else:
        source = node.module or ''
      names = [f'{source}.{alias.name}' for alias in node.names]
    else:
      continue
    for name in names:
      target = _nearest_module(name, modules)
      if target and target != module:
        yield target


def import_graph(root: pathlib.Path, trees: Iterable[str]) -> dict[str, set[str]]:
  """Module -> the modules of `trees` it imports."""
  modules = module_paths(root, trees)
  return {module: set(imported_modules(module, path, modules))
          for module, path in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """The sets of modules that import each other through a circle (strongly connected
  components of more than one module), each sorted, in a stable order."""
  index, low, stack, on_stack, cycles = {}, {}, [], set(), []

  def visit(start: str) -> None:
    # Iterative Tarjan: (module, its remaining successors) frames, so deep trees need no
    # recursion limit.
    index[start] = low[start] = len(index)
    stack.append(start)
    on_stack.add(start)
    frames = [(start, iter(sorted(graph.get(start, ()))))]
    while frames:
      module, successors = frames[-1]
      for successor in successors:
        if successor not in index:
          index[successor] = low[successor] = len(index)
          stack.append(successor)
          on_stack.add(successor)
          frames.append((successor, iter(sorted(graph.get(successor, ())))))
          break
        if successor in on_stack:
          low[module] = min(low[module], index[successor])
      else:
        frames.pop()
        if frames:
          parent = frames[-1][0]
          low[parent] = min(low[parent], low[module])
        if low[module] == index[module]:
          component = []
          while True:
            member = stack.pop()
            on_stack.discard(member)
            component.append(member)
            if member == module:
              break
          if len(component) > 1:
            cycles.append(sorted(component))

  for module in sorted(graph):
    if module not in index:
      visit(module)
  return sorted(cycles)


def test_no_import_cycle_in_the_package_or_bench():
  cycles = import_cycles(import_graph(ROOT, TREES))
  assert not cycles, ('modules that import each other in a circle (move what both need into a '
                      f'module of its own): {cycles}')


def test_the_graph_sees_every_kind_of_import(tmp_path):
  package = tmp_path / 'pkg'
  (package / 'sub').mkdir(parents=True)
  for name in ('__init__', 'a', 'b', 'c', 'sub/__init__', 'sub/d'):
    (package / f'{name}.py').write_text('')
  (package / 'a.py').write_text('import pkg.b\nfrom pkg import c\n')
  (package / 'b.py').write_text('def f():\n  from .sub import d\n')
  (package / 'sub' / 'd.py').write_text('from .. import a\nfrom ..c import something\n')
  (package / 'c.py').write_text('import os\nfrom pkg.sub import not_a_module\n')
  assert import_graph(tmp_path, ['pkg']) == {
      'pkg': set(), 'pkg.a': {'pkg.b', 'pkg.c'}, 'pkg.b': {'pkg.sub.d'}, 'pkg.c': {'pkg.sub'},
      'pkg.sub': set(), 'pkg.sub.d': {'pkg.a', 'pkg.c'}}


def test_import_cycles_finds_each_circle_once():
  graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a', 'd'}, 'd': set(), 'e': {'f'}, 'f': {'e'},
           'g': {'a'}}
  assert import_cycles(graph) == [['a', 'b', 'c'], ['e', 'f']]
  assert import_cycles({'a': {'b'}, 'b': {'c'}, 'c': set()}) == []
