r"""V-trace (IMPALA) on MuJoCo with an MLP (and optional LSTM): learner or actor by --run_mode.

  python -m seed_rl.environments.mujoco.vtrace_main --run_mode=learner --env_name=HalfCheetah-v5
  python -m seed_rl.environments.mujoco.vtrace_main --run_mode=actor --task=0

or everything at once: `./run_local.sh mujoco vtrace 4`. The MuJoCo ids need the `mujoco` extra
(`pip install -e '.[mujoco]'`; run_local.sh installs it). Continuous actions use a tanh-squashed
normal policy; with `--discretization=lin|log` a categorical one per action dimension. The
learner's flags keep the original's defaults. Actors import no TensorFlow: the network and the
optimizer import it when the learner calls them.
"""

from collections.abc import Callable, Sequence
from typing import Any

from absl import app, flags

from seed_rl.agents.vtrace import config as agent_config
from seed_rl.agents.vtrace import learner_flags  # noqa: F401  (defines flags)
from seed_rl.common import entry_point
from seed_rl.environments.mujoco import env_flags

FLAGS = flags.FLAGS

flags.DEFINE_float('learning_rate', 3e-4, 'Adam learning rate (constant).')
flags.DEFINE_integer('n_mlp_layers', 2, 'Number of hidden layers of the MLP.')
flags.DEFINE_integer('mlp_size', 64, 'Units of each hidden layer of the MLP.')
flags.DEFINE_integer('n_lstm_layers', 0, 'Number of LSTM layers after the MLP (0: none).')
flags.DEFINE_integer('lstm_size', 64, 'Units of each LSTM layer.')
flags.DEFINE_bool('normalize_observations', False,
                  'Normalize the observations with running mean and std (updated by the '
                  'training batches).')


def create_agent(unused_action_space: Any, unused_observation_space: Any,
                 parametric_action_distribution: Any) -> Any:
  """`MLPandLSTM`, behind a `NormalizeObservationsWrapper` with --normalize_observations."""
  # pylint: disable=g-import-not-at-top
  from seed_rl.agents.vtrace import networks
  from seed_rl.common import normalizer
  # pylint: enable=g-import-not-at-top
  agent = networks.MLPandLSTM(parametric_action_distribution,
                              mlp_sizes=[FLAGS.mlp_size] * FLAGS.n_mlp_layers,
                              lstm_sizes=[FLAGS.lstm_size] * FLAGS.n_lstm_layers)
  if FLAGS.normalize_observations:
    agent = normalizer.NormalizeObservationsWrapper(agent, normalizer.Normalizer())
  return agent


def create_optimizer(unused_final_iteration: int) -> tuple[Any, Callable[[Any], float]]:
  """Adam with a constant learning rate, as the original."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  learning_rate_fn = lambda iteration: FLAGS.learning_rate
  optimizer = tf.keras.optimizers.Adam(FLAGS.learning_rate)
  return optimizer, learning_rate_fn


def main(argv: Sequence[str]) -> None:
  entry_point.run(argv, env_flags.create_environment_fn, 'seed_rl.agents.vtrace.learner',
                  create_agent, create_optimizer,
                  create_config_fn=agent_config.VTraceConfig.from_flags)


if __name__ == '__main__':
  app.run(main)
