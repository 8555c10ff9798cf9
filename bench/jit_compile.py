"""Does XLA (`tf.function(jit_compile=True)`) speed up the learner's network on this machine?

Times the V-trace Atari networks (`nature`: the Nature-DQN torso without LSTM; `impala`:
`ImpalaDeep` with its LSTM) the two ways the learner runs them, with and without XLA, in the same
run and alternating (`--repeats`), and prints the medians and the ratio XLA / default:
- inference: one policy step on a batch of `--inference_batch_size` 84x84x1 frames;
- training: the gradient of a loss over the whole network output on `--batch_size` unrolls of
  `--unroll_length + 1` steps (the forward and backward passes of a training step, without the
  optimizer, whose cost does not depend on XLA much).

  .venv/bin/python -m bench.jit_compile --network nature --seconds 3

A ratio below 1 means XLA is faster.
"""

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import gymnasium
import tensorflow as tf

from bench import ceiling_measurement
from seed_rl.environments.atari import nature_networks
from seed_rl.agents.vtrace import networks
from seed_rl.common import parametric_distribution
from seed_rl.common.structures import EnvOutput

NUM_ACTIONS = 6  # Pong's minimal action set.
FRAME_SHAPE = (84, 84, 1)


def create_network(name: str) -> tf.keras.Model:
  """The V-trace network `name` ('nature' or 'impala') for `NUM_ACTIONS` actions."""
  if name == 'impala':
    return networks.ImpalaDeep(NUM_ACTIONS)
  if name == 'nature':
    distribution = parametric_distribution.get_parametric_distribution_for_action_space(
        gymnasium.spaces.Discrete(NUM_ACTIONS))
    return nature_networks.NatureActorCritic(distribution)
  raise ValueError(f'network must be nature or impala, got {name!r}')


def synthetic_inputs(leading_shape: list[int]) -> tuple[tf.Tensor, EnvOutput]:
  """`(prev_actions, env_outputs)` of random frames and rewards, of `leading_shape` rows; the
  same for the same shape."""
  frames = tf.random.stateless_uniform(leading_shape + list(FRAME_SHAPE), [0, 0], 0, 256,
                                       tf.int32)
  env_outputs = EnvOutput(
      reward=tf.random.stateless_uniform(leading_shape, [0, 1]),
      done=tf.zeros(leading_shape, tf.bool),
      observation=tf.cast(frames, tf.uint8), abandoned=tf.zeros(leading_shape, tf.bool),
      episode_step=tf.zeros(leading_shape, tf.int32))
  return tf.zeros(leading_shape, tf.int64), env_outputs


def inference_step(network: tf.keras.Model, batch_size: int,
                   jit_compile: bool) -> Callable[[], Any]:
  """One policy step on a batch, its actions copied to the host."""
  prev_actions, env_outputs = synthetic_inputs([batch_size])
  state = network.initial_state(batch_size)

  @tf.function(jit_compile=jit_compile)
  def step(prev_actions, env_outputs, state):
    outputs, _ = network(prev_actions, env_outputs, state)
    return outputs.action

  return lambda: step(prev_actions, env_outputs, state).numpy()


def training_gradient(network: tf.keras.Model, batch_size: int, unroll_length: int,
                      jit_compile: bool) -> Callable[[], Any]:
  """The gradient of a loss on every output of the unrolled network, copied to the host."""
  prev_actions, env_outputs = synthetic_inputs([unroll_length + 1, batch_size])
  state = network.initial_state(batch_size)
  network(prev_actions, env_outputs, state, unroll=True)  # Builds the variables.

  @tf.function(jit_compile=jit_compile)
  def gradient(prev_actions, env_outputs, state):
    with tf.GradientTape() as tape:
      outputs, _ = network(prev_actions, env_outputs, state, unroll=True, is_training=True)
      loss = (tf.reduce_mean(tf.square(outputs.policy_logits)) +
              tf.reduce_mean(tf.square(outputs.baseline)))
    return tape.gradient(loss, network.trainable_variables)

  return lambda: [g.numpy() for g in gradient(prev_actions, env_outputs, state)]


def measure(args: argparse.Namespace) -> dict[str, dict[bool, float]]:
  """Median seconds per call of each part, with (True) and without (False) XLA."""
  network = create_network(args.network)
  parts = {
      'inference': lambda jit: inference_step(network, args.inference_batch_size, jit),
      'training': lambda jit: training_gradient(network, args.batch_size, args.unroll_length,
                                                jit),
  }
  results = {}
  for part, create in parts.items():
    calls = {jit: create(jit) for jit in (False, True)}
    times = {False: [], True: []}
    for _ in range(args.repeats):
      for jit in (False, True):
        times[jit].append(ceiling_measurement.time_calls(calls[jit], args.seconds))
    results[part] = {jit: statistics.median(values) for jit, values in times.items()}
  return results


def format_results(network: str, results: dict[str, dict[bool, float]]) -> list[str]:
  return [f'{network} {part}: default {times[False] * 1e3:.2f} ms, XLA {times[True] * 1e3:.2f} '
          f'ms per call; XLA / default {times[True] / times[False]:.2f}'
          for part, times in results.items()]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--network', choices=('nature', 'impala'), default='nature')
  parser.add_argument('--inference_batch_size', type=int, default=8)
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--unroll_length', type=int, default=32)
  parser.add_argument('--seconds', type=float, default=3., help='Timed seconds per measurement.')
  parser.add_argument('--repeats', type=int, default=2)
  args = parser.parse_args()
  print(f'{args.network}: inference batch {args.inference_batch_size}, training '
        f'{args.batch_size} unrolls of {args.unroll_length + 1} steps; devices: '
        f'{[d.name for d in tf.config.list_logical_devices()]}', flush=True)
  for line in format_results(args.network, measure(args)):
    print(line, flush=True)


if __name__ == '__main__':
  main()
