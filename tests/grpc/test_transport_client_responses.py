"""test_grpc_client_responses's tests that take an address, over gRPC (unix socket) and shared memory."""

from tests.grpc import test_grpc_client_responses
from tests.shm import suites

globals().update(suites.over_both_transports(test_grpc_client_responses, skip={'test_bytes_that_are_no_response_raise_internal': 'a hand-made gRPC server'}))
