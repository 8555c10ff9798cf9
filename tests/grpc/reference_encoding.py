"""Message-based encoding of tensors and calls, the reference the tests compare against.

The package writes the per-step messages directly (`seed_rl.grpc.wire`); these helpers build the
same `Tensor`, `CallRequest` and `CallResponse` contents through the protobuf message classes,
so tests can check the direct bytes against upb's and craft requests by hand.
"""

from typing import Any, Sequence

import numpy as np

from seed_rl.grpc import codec
from seed_rl.grpc import service_pb2


def encode(value: Any) -> service_pb2.Tensor:
  """Encodes one leaf (array, numpy or Python scalar, string) as a `Tensor` message."""
  return codec.encode_array(codec.to_array(value))


def add_array(container: Any, arr: np.ndarray, code: int) -> None:
  """Appends the `Tensor` of an array returned by `codec.to_array` to a repeated `Tensor` field,
  sent with the wire dtype `code`."""
  if code == codec.DT_STRING:
    container.add(dtype=code, shape=arr.shape, string_val=arr.ravel().tolist())
  else:
    container.add(dtype=code, shape=arr.shape, content=codec.array_bytes(arr))


def add_leaves(container: Any, leaves: Sequence[Any]) -> None:
  """Appends one `Tensor` per leaf to a repeated `Tensor` field (a call's arguments).

  Raises:
    codec.CodecError: a leaf cannot be sent; the message names it as arg[i].
  """
  for i, leaf in enumerate(leaves):
    try:
      arr = codec.to_array(leaf)
      add_array(container, arr, codec.wire_code(arr))
    except codec.CodecError as e:
      raise codec.CodecError(f'arg[{i}]: {e}') from None


def call_request(function: str, leaves: Sequence[Any]) -> service_pb2.CallRequest:
  """`CallRequest(function, tensor=[one Tensor per leaf])` built as a message."""
  request = service_pb2.CallRequest(function=function)
  add_leaves(request.tensor, leaves)
  return request
