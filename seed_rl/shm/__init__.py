"""Shared-memory transport of seed_rl's central inference, for actors on the learner's machine.

An address `shm:NAME` (in `seed_rl.grpc.Server([...])` beside gRPC addresses, and in
`seed_rl.grpc.Client('shm:NAME')`) carries the same bytes as gRPC (a serialized CallRequest, a
serialized CallResponse), so that the server serves both transports through one code path (token,
limits, batching, per-caller validation, finish and shutdown statuses); only the carriage differs:

- Rendezvous (`address`): the server listens on a unix socket in Linux's abstract namespace,
  named after this user and NAME (no file: the name is freed however the server ends); each side
  checks that the other runs as the same user. A client connects, presents the token, and gets the method
  signatures and a shared-memory segment (`segment`: a memfd, passed over the socket, so that it
  has no name anywhere: it is freed when the last process that maps it exits, however it exits,
  and nothing can be left behind in /dev/shm).
- Calls (`frames`): the client writes its request into the segment and sends its length over
  the socket (one small write wakes the server's thread of that connection); the server writes
  the response into the segment and sends its length back. The server reads a request only once
  its length has arrived, so a client killed while writing one leaves no partial request behind.
  End of the socket is the end of the stream, for both sides.

This package needs only the standard library (no TensorFlow, no grpcio): `connection` is the
client side, `listener` the server side.
"""
