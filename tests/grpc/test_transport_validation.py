"""test_grpc_validation's tests that take an address, over gRPC (unix socket) and shared memory."""

from tests.grpc import test_grpc_validation
from tests.shm import suites

globals().update(suites.over_both_transports(test_grpc_validation, skip={}))
