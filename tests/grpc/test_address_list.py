"""A learner's list of addresses (`--server_address=localhost:8686,shm:run1`) and the address an
actor given such a list connects to."""

import pytest

from seed_rl.grpc import address_list


@pytest.mark.parametrize('value,addresses', [
    ('localhost:8686', ['localhost:8686']),
    ('localhost:8686,shm:run1', ['localhost:8686', 'shm:run1']),
    ('unix:/tmp/l.sock, shm:a ,[::]:1', ['unix:/tmp/l.sock', 'shm:a', '[::]:1']),
])
def test_a_list_splits_into_its_addresses_in_order(value, addresses):
  assert address_list.split(value) == addresses


@pytest.mark.parametrize('value,message', [
    ('localhost:8686,', 'has an empty item'),
    (',shm:a', 'has an empty item'),
    ('shm:a,,localhost:1', 'has an empty item'),
    ('shm:a,localhost:1,shm:a', 'lists shm:a more than once'),
])
def test_a_list_with_an_empty_item_or_a_repeat_is_refused(value, message):
  with pytest.raises(address_list.AddressListError, match=message):
    address_list.split(value)


@pytest.mark.parametrize('value,chosen', [
    ('localhost:8686', 'localhost:8686'),
    ('shm:run1', 'shm:run1'),
    ('localhost:8686,shm:run1', 'shm:run1'),  # Shared memory first, wherever it is listed.
    ('shm:a,localhost:8686,shm:b', 'shm:a'),
    ('unix:/tmp/l.sock,localhost:8686', 'unix:/tmp/l.sock'),  # No shm: the first.
])
def test_an_actor_takes_the_first_shared_memory_address_else_the_first(value, chosen):
  assert address_list.for_actor(value) == chosen
