r"""PPO (the configurable on-policy agent) on any Gymnasium environment: learner or actor.

  python -m seed_rl.environments.gym.ppo_main --run_mode=learner --env_name=CartPole-v1
  python -m seed_rl.environments.gym.ppo_main --run_mode=actor --task=0

or everything at once: `./run_local.sh gym ppo 2`. Discrete actions get a categorical policy,
Box actions in [-1, 1] a Gaussian one. The loss and networks come from --gin_config (default:
the packaged ppo.gin) and --gin_bindings; the defaults below suit classic control tasks.
Actors import no TensorFlow.
"""

from collections.abc import Sequence

from absl import app
from absl import flags

from seed_rl.agents.policy_gradient import config as agent_config
from seed_rl.agents.policy_gradient import main_flags
from seed_rl.common import entry_point
from seed_rl.environments.gym import env
from seed_rl.environments.gym import env_flags  # noqa: F401  (defines flags)

FLAGS = flags.FLAGS

for name, value in [('num_envs', 16), ('env_batch_size', 8), ('unroll_length', 32),
                    ('batch_size', 0), ('batch_size_transitions', 128),
                    ('step_size_transitions', 512), ('epochs_per_step', 4),
                    ('clip_norm', 0.5), ('learning_rate', 2.5e-4), ('lr_decay_multiplier', 0.),
                    ('total_environment_frames', 5e5)]:
  FLAGS.set_default(name, value)


def main(argv: Sequence[str]) -> None:
  entry_point.run(argv, env.create_environment, 'seed_rl.agents.policy_gradient.learner',
                  main_flags.create_agent, main_flags.create_optimizer,
                  prepare_learner=main_flags.parse_gin,
                  create_config_fn=agent_config.PolicyGradientConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
