"""DeepMind Lab: loads the native module deepmind_lab.so (see docs/users/python_api.md)."""

import importlib.machinery
import importlib.util
import os
import sys


def _load_native_module():
  path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'deepmind_lab.so')
  loader = importlib.machinery.ExtensionFileLoader(__name__, path)
  spec = importlib.util.spec_from_file_location(__name__, path, loader=loader)
  module = importlib.util.module_from_spec(spec)
  sys.modules[__name__] = module
  loader.exec_module(module)
  return module


_deepmind_lab = _load_native_module()
Lab = _deepmind_lab.Lab
