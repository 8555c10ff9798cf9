"""The DeepMind Lab agent: the deep IMPALA network (`ImpalaDeep`).

DMLab and Atari share one network, defined once in `seed_rl.agents.vtrace.networks`; this
module keeps the original's module and class name for it (`dmlab/networks.py`'s `ImpalaDeep`,
here `seed_rl.environments.dmlab.networks.ImpalaDeep`).
It imports TensorFlow: only the learner imports it.
"""

from seed_rl.agents.vtrace.networks import AgentOutput
from seed_rl.agents.vtrace.networks import ImpalaDeep

__all__ = ['AgentOutput', 'ImpalaDeep']
