"""test_grpc_robustness's tests that take an address, over gRPC (unix socket) and shared memory.

Left out, gRPC's alone: those that send malformed requests on raw gRPC streams or aio channels
(over shared memory the same bytes reach the same `_dispatch`)."""

from tests.grpc import test_grpc_robustness
from tests.shm import suites

globals().update(suites.over_both_transports(test_grpc_robustness, skip={
    'test_malformed_requests_do_not_disturb_a_good_client': 'raw gRPC streams',
    'test_many_concurrent_streams': 'grpc.aio channels',
    'test_a_bug_in_serving_answers_internal_and_keeps_the_stream': 'raw gRPC streams',
}))
