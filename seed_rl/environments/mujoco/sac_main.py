r"""SAC on MuJoCo (and the toy environments): learner or actor by --run_mode.

  python -m seed_rl.environments.mujoco.sac_main --run_mode=learner --env_name=HalfCheetah-v5
  python -m seed_rl.environments.mujoco.sac_main --run_mode=actor --task=0

or everything at once: `./run_local.sh mujoco sac 1 4`. With `--her_window_length` the learner
replays with hindsight goals (a GoalEnv such as `--env_name=bit_flip`). The original's
sac_main imported a module that never existed; this one runs. Actors import no TensorFlow: the
network and the optimizer import it when the learner calls them.
"""

from collections.abc import Callable, Sequence
from typing import Any, Optional

from absl import app
from absl import flags
from absl import logging
import gymnasium
import numpy as np

from seed_rl.agents.sac import config as agent_config
from seed_rl.agents.sac import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.mujoco import env_flags

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 3e-4, 'Adam learning rate (constant).')
flags.DEFINE_integer('n_critics', 2, 'Number of Q networks (the smallest Q trains the policy).')
flags.DEFINE_integer('n_mlp_layers', 2, 'Number of hidden layers of each MLP.')
flags.DEFINE_integer('mlp_size', 256, 'Units of each hidden layer.')
flags.DEFINE_integer('n_lstm_layers', 0,
                     'Number of LSTM layers (0: feed-forward ActorCriticMLP; otherwise '
                     'ActorCriticLSTM).')
flags.DEFINE_integer('lstm_size', 256, 'Units of each LSTM layer.')
flags.DEFINE_bool('normalize_observations', False,
                  'Normalize the observations with running mean and std (updated by the '
                  'training batches).')

# The SAC learner's defaults are the original's, sized for a cluster (a gradient step per 64
# environment steps, a budget of 1e9 frames). These train HalfCheetah-v5 on one machine within a
# budget that ends, as the SAC paper does: one gradient step of 256 transitions per environment
# step, targets updated with tau 0.005 and, unless --target_entropy is given, the entropy cost
# adapted towards minus the action dimension (`set_target_entropy`). docs/tuning.md has what they
# reach; gcp/train_mujoco.sh passes the cluster's values.
for name, value in [('replay_ratio', 256.), ('polyak', 0.995), ('entropy_cost', 0.1),
                    ('total_environment_frames', 2e5)]:
  FLAGS.set_default(name, value)


def target_entropy_of(action_space: gymnasium.Space) -> Optional[float]:
  """The SAC paper's target entropy for `action_space`: minus its number of dimensions for a
  Box (-6 for HalfCheetah, -3 for Hopper, -1 for Pendulum); None for any other space (bit_flip's
  discrete actions, the --discretization ones), whose entropy that rule does not fit, so that
  their entropy cost stays fixed at --entropy_cost."""
  if isinstance(action_space, gymnasium.spaces.Box):
    return -float(np.prod(action_space.shape))
  return None


def set_target_entropy() -> None:
  """Learner only: when --target_entropy is not given, sets it to `target_entropy_of` the
  action space of the environment of the flags, and logs the value chosen.

  Set in FLAGS, before the learner records its flags, so that the logdir's flag file holds the
  value the learner trained with.
  """
  if FLAGS.target_entropy is not None:
    return
  env = env_flags.create_environment_fn(0, FLAGS)
  try:
    action_space = env.action_space
  finally:
    env.close()
  FLAGS.target_entropy = target_entropy_of(action_space)
  if FLAGS.target_entropy is None:
    logging.info('SAC: no --target_entropy for the action space %s of %s: the entropy cost '
                 'stays %g.', action_space, FLAGS.env_name, FLAGS.entropy_cost)
  else:
    logging.info('SAC: --target_entropy=%g, minus the action dimension of %s (%s).',
                 FLAGS.target_entropy, FLAGS.env_name, action_space)


def create_agent(unused_action_space: Any, unused_observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """`ActorCriticMLP` (or `ActorCriticLSTM`), normalized with --normalize_observations."""
  # pylint: disable=g-import-not-at-top
  from seed_rl.agents.sac import networks
  from seed_rl.common import normalizer
  # pylint: enable=g-import-not-at-top
  mlp_sizes = [FLAGS.mlp_size] * FLAGS.n_mlp_layers
  if FLAGS.n_lstm_layers:
    agent = networks.ActorCriticLSTM(
        parametric_action_distribution, FLAGS.n_critics,
        lstm_sizes=[FLAGS.lstm_size] * FLAGS.n_lstm_layers, pre_mlp_sizes=mlp_sizes,
        post_mlp_sizes=mlp_sizes, ff_mlp_sizes=mlp_sizes)
  else:
    agent = networks.ActorCriticMLP(parametric_action_distribution, FLAGS.n_critics, mlp_sizes)
  if FLAGS.normalize_observations:
    agent = normalizer.NormalizeObservationsWrapper(agent, normalizer.Normalizer())
  return agent


def create_optimizer(unused_final_iteration: int) -> tuple[Any, Callable[[Any], float]]:
  """Adam with a constant learning rate, as the original."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  optimizer = tf.keras.optimizers.Adam(FLAGS.learning_rate)
  return optimizer, lambda iteration: FLAGS.learning_rate


def main(argv: Sequence[str]) -> None:
  entry_point.run(argv, env_flags.create_environment_fn, 'seed_rl.agents.sac.learner',
                  create_agent, create_optimizer, prepare_learner=set_target_entropy,
                  create_config_fn=agent_config.SACConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
