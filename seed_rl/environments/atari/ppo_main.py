r"""PPO (the configurable on-policy agent) on Atari: learner or actor by --run_mode.

  python -m seed_rl.environments.atari.ppo_main --run_mode=learner --game=Pong
  python -m seed_rl.environments.atari.ppo_main --run_mode=actor --task=0

or everything at once: `./run_local.sh atari ppo 2 8`. The network is the Nature-DQN torso on
`--stack_size` frames stacked inside the network, no LSTM (`nature_networks.NatureOnPolicyAgent`,
kernels by `--initialization`). Its minibatches are whole unrolls shuffled anew in each epoch
(`--batch_mode=shuffle`, which the frame stack kept in the network's state needs: a minibatch of
transitions cut from their unrolls would stack frames of other steps).

The loss and optimizer come from --gin_config (default: the packaged gin/ppo.gin, PPO's Atari
setting) and --gin_bindings: V-trace's loss in the same agent is
`--gin_bindings=GeneralizedOnPolicyLoss.policy_loss=@vtrace()
--gin_bindings=GeneralizedOnPolicyLoss.advantage_estimator=@VTrace()`. The defaults below are
the batches of Schulman et al. (2017)'s Atari PPO, with which `bench/learn_atari.py --agent ppo`
reached +15 on Pong (docs/tuning.md): steps of 16 unrolls of 64, 3 epochs of 4 minibatches of 4
unrolls. Actors import no TensorFlow.
"""

import os
from collections.abc import Callable, Sequence
from typing import Any

from absl import app
from absl import flags

from seed_rl.agents.policy_gradient import config as agent_config
from seed_rl.agents.policy_gradient import main_flags
from seed_rl.common import entry_point
from seed_rl.environments.atari import env
from seed_rl.environments.atari import network_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

GIN_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gin', 'ppo.gin')

flags.DEFINE_integer('stack_size', 4, 'Frames stacked inside the network (at most 4).')

for name, value in [('num_envs', 16), ('env_batch_size', 8), ('unroll_length', 64),
                    ('batch_size', 4), ('batch_size_transitions', 0), ('batches_per_step', 4),
                    ('epochs_per_step', 3), ('batch_mode', 'shuffle'), ('clip_norm', 0.5),
                    ('learning_rate', 2.5e-4), ('lr_decay_multiplier', 0.),
                    ('total_environment_frames', 1e7), ('gin_config', GIN_CONFIG)]:
  FLAGS.set_default(name, value)

LEARNER_MODULE = 'seed_rl.agents.policy_gradient.learner'
create_config = agent_config.PolicyGradientConfig.from_flags
create_optimizer = main_flags.create_optimizer
prepare_learner = main_flags.parse_gin


def create_agent(unused_action_space: Any, observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """The Nature-DQN network without LSTM, behind the on-policy learner's calling convention."""
  from seed_rl.environments.atari import nature_networks  # pylint: disable=g-import-not-at-top
  return nature_networks.NatureOnPolicyAgent(
      parametric_action_distribution, stack_size=FLAGS.stack_size,
      observation_shape=observation_space.shape, initialization=FLAGS.initialization)


def main(argv: Sequence[str],
         create_env_fn: Callable[[int, Any], Any] = env.create_environment) -> None:
  """The learner or an actor on `create_env_fn`'s environments (the Atari game of --game)."""
  entry_point.run(argv, create_env_fn, LEARNER_MODULE, create_agent, create_optimizer,
                  prepare_learner=prepare_learner, create_config_fn=create_config)


if __name__ == '__main__':
  app.run(main)
