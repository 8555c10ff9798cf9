"""The Atari networks a benchmark can choose (`--network` of the bench's Atari entry points).

- `impala`: each agent's default Atari network (`ImpalaDeep` for V-trace, `DuelingLSTMDQNNet`
  for R2D2); the entry points take it from `seed_rl.environments.atari.*_main`.
- `nature`: the Nature-DQN torso without LSTM, with the agent's heads (`bench.nature_networks`).
- `minimal`: a tiny MLP, so that a benchmark measures the pipeline (actors, RPC, batching, unroll
  bookkeeping, training loop) rather than convolutions.

Actors import the entry points too, so TensorFlow is imported only when a network is created.
"""

from collections.abc import Sequence
from typing import Any

NETWORKS = ('minimal', 'nature', 'impala')


def _unknown(network: str) -> ValueError:
  return ValueError(f'network must be minimal or nature here (impala is the entry point\'s), '
                    f'got {network!r}')


def create_vtrace_network(network: str, parametric_action_distribution: Any) -> Any:
  """The V-trace agent of `network` 'minimal' (an MLP of 8 units) or 'nature'."""
  # pylint: disable=g-import-not-at-top
  from bench import nature_networks
  from seed_rl.agents.vtrace import networks
  # pylint: enable=g-import-not-at-top
  if network == 'nature':
    return nature_networks.NatureActorCritic(parametric_action_distribution)
  if network == 'minimal':
    return networks.MLPandLSTM(parametric_action_distribution, mlp_sizes=[8])
  raise _unknown(network)


def create_r2d2_network(network: str, num_actions: int, observation_shape: Sequence[int],
                        stack_size: int) -> Any:
  """The R2D2 agent of `network` 'minimal' (MLP and LSTM of 8 units) or 'nature'."""
  # pylint: disable=g-import-not-at-top
  from bench import nature_networks
  from seed_rl.agents.r2d2 import networks
  # pylint: enable=g-import-not-at-top
  if network == 'nature':
    return nature_networks.NatureDQNNet(num_actions, observation_shape, stack_size)
  if network == 'minimal':
    return networks.RecurrentQNetwork(num_actions, mlp_sizes=[8], lstm_size=8)
  raise _unknown(network)
