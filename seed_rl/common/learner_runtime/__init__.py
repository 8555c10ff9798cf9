"""The learner runtime: what every seed_rl learner shares, with an agent plugged in.

An agent subclasses `LearnerAgent` (its networks, policy, loss and training step) and its
`learner_loop` calls `run(agent, create_env_fn, create_optimizer_fn, config)`.

The agent's functions run under AutoGraph (Python `if`/`for` on tensors work in them), and so do
the runtime's functions that call them. The graph-building helpers of `seed_rl.common` that call
no agent code are marked `tf.autograph.experimental.do_not_convert`: converting them would
lengthen every learner's start (docs/performance.md, Learner start-up). Such a helper writes
tensor conditions as `tf.cond`.
"""

from seed_rl.common.learner_runtime.agent import LearnerAgent
from seed_rl.common.learner_runtime.agent import Minimize
from seed_rl.common.learner_runtime.agent import SampledPolicyAgent
from seed_rl.common.learner_runtime.inference import Unroll
from seed_rl.common.learner_runtime.inference_gate import InferenceGate
from seed_rl.common.learner_runtime.runtime import run

__all__ = ['InferenceGate', 'LearnerAgent', 'Minimize', 'SampledPolicyAgent', 'Unroll',
           'run']
