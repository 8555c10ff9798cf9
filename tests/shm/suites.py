"""Runs a module of seed_rl.grpc's RPC semantics tests again over both transports.

Each test of the module that takes the `unix_address` fixture runs with that fixture replaced by
`transport_address` (conftest): gRPC over a unix socket and shared memory (`shm:NAME`), so that
one set of tests states what both transports guarantee.
"""

import inspect
import types
from typing import Any, Dict, Mapping

import pytest
from _pytest import fixtures


def _transport_address(transport_address):
  return transport_address


def over_both_transports(module: types.ModuleType, skip: Mapping[str, str]) -> Dict[str, Any]:
  """The names to add to a test module's globals: `module`'s tests that take `unix_address`
  (but those in `skip`, which maps a test's name to why it is gRPC's alone), its fixtures, its
  marks, and the `unix_address` fixture that is each transport's address in turn."""
  names: Dict[str, Any] = {}
  for name, value in vars(module).items():
    if isinstance(value, fixtures.FixtureFunctionDefinition):
      names[name] = value
    elif (name.startswith('test_') and callable(value) and name not in skip and
          'unix_address' in inspect.signature(value).parameters):
      names[name] = value
  unknown = set(skip) - set(vars(module))
  if unknown:
    raise ValueError(f'{module.__name__} has no tests {sorted(unknown)}: update the skip list.')
  names['unix_address'] = pytest.fixture(name='unix_address')(_transport_address)
  names['pytestmark'] = getattr(module, 'pytestmark', [])
  return names
