"""Fixtures of the DeepMind Lab tests: the fake `deepmind_lab` module (tests/.../fake)."""

import pathlib
import sys

import pytest

from seed_rl.environments.dmlab import env_config

FAKE_DIR = pathlib.Path(__file__).resolve().parent / 'fake'


@pytest.fixture
def fake_lab(monkeypatch):
  """The fake `deepmind_lab` module, importable for the duration of one test."""
  monkeypatch.syspath_prepend(str(FAKE_DIR))
  monkeypatch.delitem(sys.modules, 'deepmind_lab', raising=False)
  import deepmind_lab  # pylint: disable=g-import-not-at-top
  assert deepmind_lab.__file__.startswith(str(FAKE_DIR)), deepmind_lab.__file__
  yield deepmind_lab
  for lab in deepmind_lab.instances:
    lab.close()
  sys.modules.pop('deepmind_lab', None)


def make_config(**overrides):
  """The config `create_environment` reads: the flags' defaults, with `overrides`."""
  return env_config.DmLabConfig(**overrides)
