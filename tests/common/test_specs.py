"""Tests of seed_rl.common.specs."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.common import specs

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize('space_fn, expected', [
    (lambda s: s.Box(0, 255, (84, 84, 1), np.uint8), tf.TensorSpec([84, 84, 1], tf.uint8)),
    (lambda s: s.Discrete(6), tf.TensorSpec([], tf.int64)),
    (lambda s: s.MultiDiscrete([3, 3]), tf.TensorSpec([2], tf.int64)),
    (lambda s: s.Tuple((s.Box(-1, 1, (2,)), s.Box(-1, 1, (3,)))), tf.TensorSpec([5], tf.float32)),
])
def test_tensor_spec_from_gym_space(space_fn, expected):
  import gymnasium
  spec = specs.tensor_spec_from_gym_space(space_fn(gymnasium.spaces), 'obs')
  assert spec.shape == expected.shape and spec.dtype == expected.dtype and spec.name == 'obs'


def test_tensor_spec_from_gym_space_rejects_unsupported_spaces():
  import gymnasium
  with pytest.raises(ValueError, match='1-D'):
    specs.tensor_spec_from_gym_space(gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(2),)))
  with pytest.raises(ValueError, match='no shape and dtype'):
    specs.tensor_spec_from_gym_space(gymnasium.spaces.Sequence(gymnasium.spaces.Discrete(2)))


def test_dict_spaces_give_dicts_of_specs():
  import gymnasium
  space = gymnasium.spaces.Dict({
      'observation': gymnasium.spaces.Box(-1, 1, (3,)),
      'desired_goal': gymnasium.spaces.MultiBinary(4)})
  spec = specs.tensor_spec_from_gym_space(space, 'observation')
  assert set(spec) == {'observation', 'desired_goal'}
  assert spec['observation'].shape == [3] and spec['observation'].dtype == tf.float32
  assert spec['desired_goal'].shape == [4] and spec['desired_goal'].dtype == tf.int8
