"""The committed generated code matches what grpcio-tools generates from service.proto."""

import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PROTO = 'seed_rl/grpc/service.proto'


@pytest.mark.timeout(60)
def test_generated_code_is_up_to_date(tmp_path):
  pytest.importorskip('grpc_tools')
  # Same invocation as documented in service.proto, run from the repository root. In a
  # subprocess: grpc_tools' protoc crashes in a process that has TensorFlow loaded.
  result = subprocess.run(
      [sys.executable, '-m', 'grpc_tools.protoc', '-I.', f'--python_out={tmp_path}',
       f'--grpc_python_out={tmp_path}', PROTO],
      cwd=REPO, capture_output=True, text=True, timeout=50)
  assert result.returncode == 0, result.stderr
  for name in ('service_pb2.py', 'service_pb2_grpc.py'):
    generated = (tmp_path / 'seed_rl' / 'grpc' / name).read_bytes()
    committed = (REPO / 'seed_rl' / 'grpc' / name).read_bytes()
    assert generated == committed, (
        f'seed_rl/grpc/{name} is stale: regenerate it (with the grpcio-tools setup.py pins) '
        f'from the repository root with '
        f'python -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. {PROTO}')


@pytest.mark.timeout(60)
def test_generated_imports_are_package_relative():
  text = (REPO / 'seed_rl' / 'grpc' / 'service_pb2_grpc.py').read_text()
  assert 'from seed_rl.grpc import service_pb2' in text
