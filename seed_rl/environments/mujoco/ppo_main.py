r"""PPO (the configurable on-policy agent) on MuJoCo: learner or actor by --run_mode.

  python -m seed_rl.environments.mujoco.ppo_main --run_mode=learner --env_name=HalfCheetah-v5
  python -m seed_rl.environments.mujoco.ppo_main --run_mode=actor --task=0

or everything at once: `./run_local.sh mujoco ppo 4`. The loss, networks and action
distribution come from --gin_config (default: the packaged gin/ppo.gin, the setting of "What
matters in on-policy RL") and --gin_bindings; the defaults below train in steps of 2048
transitions, 10 epochs of 64-transition minibatches. Actors import no TensorFlow.
"""

from collections.abc import Sequence

from absl import app
from absl import flags

from seed_rl.agents.policy_gradient import config as agent_config
from seed_rl.agents.policy_gradient import main_flags
from seed_rl.common import entry_point
from seed_rl.environments.mujoco import env_flags

FLAGS = flags.FLAGS

for name, value in [('num_envs', 32), ('env_batch_size', 8), ('unroll_length', 64),
                    ('batch_size', 0), ('batch_size_transitions', 64),
                    ('step_size_transitions', 2048), ('epochs_per_step', 10),
                    ('clip_norm', 0.5), ('total_environment_frames', 1e6),
                    ('save_checkpoint_secs', 600)]:
  FLAGS.set_default(name, value)


def main(argv: Sequence[str]) -> None:
  entry_point.run(argv, env_flags.create_environment_fn, 'seed_rl.agents.policy_gradient.learner',
                  main_flags.create_agent, main_flags.create_optimizer,
                  prepare_learner=main_flags.parse_gin,
                  create_config_fn=agent_config.PolicyGradientConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
