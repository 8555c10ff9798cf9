"""Helpers of the evaluate tests: environment factories, a library-use program, the name of
the environment that `seed_rl.evaluate`'s environment process recreates for a run, a project
of one's own whose learner defines its environment factory in its main module, and an untrained
CartPole run to damage.

The factories are passed to `seed_rl.evaluate` with `--create_env_fn=tests.evaluate_helpers:NAME`
to play a CartPole policy (4 observations, 2 actions) on environments that render differently.

  python -m tests.evaluate_helpers LOGDIR SEED EPISODES

calls `seed_rl.evaluate.evaluate` twice with the same greedy settings and prints both results as
one JSON list (absl flags are global to a process, hence a program of its own).
"""

import json
import pathlib
import sys
import types
from typing import Any

import gymnasium
import numpy as np

from seed_rl.environments.gym import env_config as gym_env_config
from seed_rl.environments.mujoco import env as mujoco_env
from seed_rl.environments.mujoco import env_config as mujoco_env_config

MUJOCO_EPISODE_STEPS = 60

# A project outside this repository, as README's "Bring your own environment" has it: a V-trace
# learner whose environment factory is in its own module, run as `python -m` or by path. Its
# environment is CartPole (so the tests' CartPole policy plays it) under an id of its own.
PROJECT_PACKAGE = 'byo_project'
PROJECT_MODULE = f'{PROJECT_PACKAGE}.learner_main'
PROJECT_ENV = 'ByoCartPole-v0'
PROJECT_EPISODE_STEPS = 7
# What its factory `create_broken_environment` raises: an exception class of its own.
PROJECT_ERROR = 'ArenaError'
PROJECT_ERROR_TEXT = 'the arena is closed'
_PROJECT_LEARNER = f'''"""A V-trace learner whose environment factory is in this module."""
from absl import app
import gymnasium
from seed_rl.common import entry_point
from seed_rl.environments.gym import vtrace_main

gymnasium.register('{PROJECT_ENV}', entry_point='gymnasium.envs.classic_control:CartPoleEnv',
                   max_episode_steps={PROJECT_EPISODE_STEPS})


def create_environment(env_id, config):
  del env_id, config
  return gymnasium.make('{PROJECT_ENV}')


class {PROJECT_ERROR}(Exception):
  """An error of the project's own: only this module defines its class."""


def create_broken_environment(env_id, config):
  del env_id, config
  raise {PROJECT_ERROR}('{PROJECT_ERROR_TEXT}')


def main(argv):
  entry_point.run(argv, create_environment, 'seed_rl.agents.vtrace.learner',
                  vtrace_main.create_agent, vtrace_main.create_optimizer)


if __name__ == '__main__':
  app.run(main)
'''


def write_project(root: pathlib.Path) -> pathlib.Path:
  """Writes the project's package into `root`; returns the learner's file."""
  package = root / PROJECT_PACKAGE
  package.mkdir(parents=True)
  (package / '__init__.py').write_text('')
  learner = package / 'learner_main.py'
  learner.write_text(_PROJECT_LEARNER)
  return learner


def create_environment_without_render(env_id: int, config: Any) -> gymnasium.Env:
  """CartPole-v1 from a factory that ignores `config.render_mode` (so it cannot render)."""
  del env_id, config
  return gymnasium.make('CartPole-v1')


class _PushLeftOrRight(gymnasium.ActionWrapper):
  """Discrete(2) actions on a [-1, 1] Box of one dimension: 0 pushes left, 1 right."""

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    self.action_space = gymnasium.spaces.Discrete(2)

  def action(self, action):
    return np.array([1. if int(action) else -1.], np.float32)


def create_two_action_mujoco_env(env_id: int, config: Any) -> gymnasium.Env:
  """`config.env_name` from the MuJoCo factory (e.g. InvertedPendulum-v5: 4 observations, like
  CartPole) with CartPole's two actions and episodes of at most `MUJOCO_EPISODE_STEPS` steps
  (software rendering is slow); renders like every MuJoCo env (`config.render_mode`). `config`
  is a `GymConfig` or the flags of the gym entry points (those the evaluate tests run)."""
  gym_config = gym_env_config.GymConfig.of(config)
  mujoco_config = mujoco_env_config.MujocoConfig(env_name=gym_config.env_name,
                                                 render_mode=gym_config.render_mode)
  env = mujoco_env.create_environment_fn(env_id, mujoco_config)
  return _PushLeftOrRight(gymnasium.wrappers.TimeLimit(env, MUJOCO_EPISODE_STEPS))



def write_cartpole_run(logdir: pathlib.Path) -> pathlib.Path:
  """A logdir as a V-trace learner of CartPole-v1 leaves it, without training: its run record
  and the real export (`checkpoints.PolicyExport`) of a linear policy of 8 weights."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed_rl.common.learner_runtime import checkpoints  # pylint: disable=g-import-not-at-top
  from seed_rl.common.structures import EnvOutput  # pylint: disable=g-import-not-at-top

  network = tf.Module()
  network.weights = tf.Variable(tf.random.stateless_normal([4, 2], seed=[1, 2]))

  def policy(prev_action, env_output, state):
    del prev_action
    logits = tf.matmul(env_output.observation, network.weights)
    return (tf.argmax(logits, -1, output_type=tf.int32), logits), state

  specs = types.SimpleNamespace(
      action=tf.TensorSpec([], tf.int32),
      env_output=EnvOutput(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.bool),
                           tf.TensorSpec([4], tf.float32), tf.TensorSpec([], tf.bool),
                           tf.TensorSpec([], tf.int32)),
      agent_state=tf.TensorSpec([1], tf.float32))
  export = checkpoints.PolicyExport(network, policy, policy, lambda size: tf.zeros([size, 1]),
                                    specs)
  tf.saved_model.save(export, str(logdir / 'saved_model'))
  (logdir / 'runs.jsonl').write_text(json.dumps({
      'entry_point': 'seed_rl.environments.gym.vtrace_main', 'agent': 'VTRACE',
      'create_env_fn': 'seed_rl.environments.gym.env:create_environment'}) + '\n')
  (logdir / 'learner_flags.txt').write_text('--env_name=CartPole-v1\n')
  return logdir


def environment_name(run: Any) -> str:
  """The name of the environment `EnvironmentProcess` makes for `run` (in a child process)."""
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  process = evaluation_env.EnvironmentProcess(run, seed=0)
  try:
    return process.wait_ready()
  finally:
    process.close(raise_errors=False)


def main(argv: list[str]) -> None:
  from seed_rl import evaluate  # pylint: disable=g-import-not-at-top
  logdir, seed, episodes = argv[1], int(argv[2]), int(argv[3])
  results = [evaluate.evaluate(logdir, episodes, greedy=True, seed=seed) for _ in range(2)]
  print(json.dumps(results))


if __name__ == '__main__':
  main(sys.argv)
