"""The package and the benchmarks read their configs' fields: no `getattr`/`hasattr` probe of a
config anywhere in `seed_rl` or `bench` (each agent and each environment factory has a typed
config; a probe would hide a missing or misspelt field)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCANNED = ('seed_rl', 'bench')
# getattr(config, ...), hasattr(self.config, ...), getattr(self._config, ...) and the like.
PROBE = re.compile(r'\b(getattr|hasattr)\(\s*(self\.)?_?config\b')

pytestmark = pytest.mark.timeout(60)


def _probes(text: str) -> list:
  return [f'line {text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}'
          for match in PROBE.finditer(text)]


def test_the_scan_finds_probes():
  assert _probes("x = getattr(config, 'a', 1)\nif hasattr(self.config, 'b'):\n") == [
      'line 1: getattr(config', 'line 2: hasattr(self.config']
  assert _probes('getattr(self._config, name)') == ['line 1: getattr(self._config']
  assert not _probes('config.batch_size\ngetattr(network, "entropy_cost", None)')


def test_no_config_is_probed_in_the_package_and_the_benchmarks():
  paths = [path for package in SCANNED for path in sorted((ROOT / package).rglob('*.py'))]
  assert len(paths) > 100  # The scan reads the package, not an empty folder.
  found = [f'{path.relative_to(ROOT)} {probe}' for path in paths
           for probe in _probes(path.read_text())]
  assert not found
