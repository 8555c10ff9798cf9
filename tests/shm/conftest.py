"""Fixtures of the seed_rl.shm tests: those of the seed_rl.grpc tests (servers, clients that are
always cleaned up, short socket directories)."""

# pylint: disable=unused-import
from tests.grpc.conftest import clients, servers, sock_dir  # noqa: F401
