"""The network flags the Atari actor-critic entry points share (`vtrace_main`, `ppo_main`).

TensorFlow-free, so that actors can import it: `nature_networks` (the learner's) reads its
names of initializations from here.
"""

from absl import flags

# The Nature-DQN network's initial kernels (`nature_networks.initialize`).
INITIALIZATIONS = ('orthogonal', 'glorot')

flags.DEFINE_enum('initialization', 'orthogonal', INITIALIZATIONS,
                  'The Nature-DQN network\'s initial kernels: orthogonal (gain sqrt(2) in the '
                  'torso, 0.01 for the policy logits, 1 for the value, as PPO\'s Atari agents '
                  'start) or glorot (Keras\'s default, with which Pong did not learn: '
                  'docs/tuning.md).')
