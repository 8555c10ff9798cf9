"""The Atari entry points' `--network=minimal`: MLPs of 8 units on the raw frame.

They measure the pipeline's own cost (actors, RPC, batching, unroll bookkeeping, the training
loop) rather than convolutions; they do not learn Atari. Imported by the learner only
(TensorFlow).
"""

from typing import Any

from seed_rl.agents.r2d2 import networks as r2d2_networks
from seed_rl.agents.vtrace import networks as vtrace_networks

UNITS = 8


def create_vtrace_network(parametric_action_distribution: Any) -> vtrace_networks.MLPandLSTM:
  """V-trace's actor-critic: an MLP of `UNITS` units, no LSTM."""
  return vtrace_networks.MLPandLSTM(parametric_action_distribution, mlp_sizes=[UNITS])


def create_r2d2_network(num_actions: int) -> r2d2_networks.RecurrentQNetwork:
  """R2D2's Q-network: an MLP and an LSTM of `UNITS` units, dueling head."""
  return r2d2_networks.RecurrentQNetwork(num_actions, mlp_sizes=[UNITS], lstm_size=UNITS)
