"""Fixtures of the DeepMind Lab tests: the fake `deepmind_lab` module (tests/.../fake)."""

import pathlib
import sys
import types

import pytest

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
  """The attributes `create_environment` reads, with the flags' defaults."""
  values = {'game': 'explore_goal_locations_small', 'num_action_repeats': 4, 'width': 96,
            'height': 72, 'level_cache_dir': None, 'homepath': '', 'dataset_path': ''}
  values.update(overrides)
  return types.SimpleNamespace(**values)
