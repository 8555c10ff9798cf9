"""Data structures of the actor/learner contract, importable without TensorFlow.

Actors import this module; the learner re-exports it through `seed_rl.common.utils`.
"""

import collections

# EnvOutput at step t: the reward of the action taken at t-1, whether `observation` is the first
# of a new episode, the observation, whether the previous episode was abandoned (cut short rather
# than terminated) and the step index within the episode (0 on the first observation).
EnvOutput = collections.namedtuple(
    'EnvOutput', 'reward done observation abandoned episode_step')
