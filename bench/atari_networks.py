"""The networks a benchmark can run the Atari entry points with (`--network` of
`bench/end_to_end.py`).

- `impala` and `nature`: the package's own (`--network` of `seed_rl.environments.atari.*_main`:
  each agent's original network, or the Nature-DQN torso without LSTM).
- `minimal`: a tiny MLP, the bench's own (`--minimal_network` of the bench's Atari entry
  points), so that a benchmark measures the pipeline (actors, RPC, batching, unroll bookkeeping,
  training loop) rather than convolutions.

Actors import the entry points too, so TensorFlow is imported only when a network is created.
"""

from typing import Any

NETWORKS = ('minimal', 'nature', 'impala')


def create_minimal_vtrace_network(parametric_action_distribution: Any) -> Any:
  """V-trace's MLP of 8 units."""
  from seed_rl.agents.vtrace import networks  # pylint: disable=g-import-not-at-top
  return networks.MLPandLSTM(parametric_action_distribution, mlp_sizes=[8])


def create_minimal_r2d2_network(num_actions: int) -> Any:
  """R2D2's MLP and LSTM of 8 units."""
  from seed_rl.agents.r2d2 import networks  # pylint: disable=g-import-not-at-top
  return networks.RecurrentQNetwork(num_actions, mlp_sizes=[8], lstm_size=8)
