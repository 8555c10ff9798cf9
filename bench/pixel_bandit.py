r"""Sanity check of the Atari learning path: a bandit whose answer is only in the pixels.

  python -m bench.pixel_bandit [--answer_delay 1] [--frame_budget 2e5] [--target 45]
                               [bench.learn_atari's flags]

Every step shows an 84x84 frame with a white block on its left or its right half, at random;
the reward is 1 for action 0 when the block was on the left `answer_delay` frames before the
current one, or action 1 when it was on the right, else 0 (6 actions, 50 steps per episode).
With the default delay of 1 only the frame before the current one tells the answer: a uniform
policy scores about 8, one that ignores the frames 25, one that reads them 49. It runs
`bench/learn_atari.py`'s learner, network and flags on it (its processes run the agent's Atari
entry point, which `--atari_main` names, on this environment): uint8 frames over the RPC layer,
stacked inside the network (which a delay of 1 or more needs, as Pong needs it to see where the
ball goes), the Nature-DQN torso. When Pong does not learn, this tells whether that path learns
from pixels at all. Frames count 4 per step (the Atari entry point's `--num_action_repeats`), so
200 per episode.

Its defaults differ from Pong's: `--learning_rate 1e-4 --reward_scaling 0.1`, and V-trace
trains as its entry point does (`learn_atari.VTRACE_ENTRY_POINT_TRAINING`: one optimizer step on
each batch of 4 unrolls of 20, no PopArt). Rewards are scaled because the values start at 0
against returns near 50: unscaled, the first advantages can settle the policy on one action
before it reads the frames. `--agent ppo` normalizes its values, so the scaling does not matter
to it. docs/tuning.md (The pixel bandit) has what each setting reached and after how many frames.
"""

import argparse
import collections
import functools
import importlib
import sys
import types
from typing import Any, Sequence

import gymnasium
import numpy as np

from bench import learn_atari

MODULE = 'bench.pixel_bandit'
# The package's entry points its processes can run (`--atari_main`).
ATARI_MAINS = tuple(sorted(set(learn_atari.MODULES.values())))
EPISODE_STEPS = 50


class PixelBandit(gymnasium.Env):
  """The bandit above, its sides drawn from a generator seeded with the env id. The rewarded
  side is the one shown `answer_delay` frames before the current one (no reward for the first
  `answer_delay` steps of an episode)."""

  # Its name in messages (`seed_rl.evaluate`'s, say), rather than the Atari flags' `--game`.
  spec = gymnasium.envs.registration.EnvSpec('PixelBandit-v0')

  def __init__(self, seed: int, answer_delay: int = 0):
    if answer_delay < 0:
      raise ValueError(f'answer_delay must be non-negative, got {answer_delay}')
    self.observation_space = gymnasium.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    self.action_space = gymnasium.spaces.Discrete(6)
    self._rng = np.random.default_rng(seed)
    # The sides of the last answer_delay + 1 frames, the current one last.
    self._sides = collections.deque(maxlen=answer_delay + 1)
    self._steps = 0

  def _frame(self) -> np.ndarray:
    side = int(self._rng.integers(2))
    self._sides.append(side)
    frame = np.zeros(self.observation_space.shape, np.uint8)
    columns = slice(5, 35) if side == 0 else slice(49, 79)
    frame[20:60, columns] = 255
    return frame

  def reset(self, *, seed=None, options=None):
    if seed is not None:
      self._rng = np.random.default_rng(seed)
    self._sides.clear()
    self._steps = 0
    return self._frame(), {}

  def step(self, action):
    answered = len(self._sides) == self._sides.maxlen
    reward = float(answered and int(action) == self._sides[0])
    self._steps += 1
    return self._frame(), reward, False, self._steps >= EPISODE_STEPS, {}


def create_environment(env_id: int, config: Any) -> PixelBandit:
  """The learner's and actors' `create_env_fn`: a bandit seeded with the env id, answered
  `config.answer_delay` frames late."""
  return PixelBandit(env_id, config.answer_delay)


def main() -> None:
  bandit_parser = argparse.ArgumentParser(add_help=False)
  bandit_parser.add_argument('--answer_delay', type=int, default=1)
  bandit_args, argv = bandit_parser.parse_known_args()
  if bandit_args.answer_delay < 0:
    bandit_parser.error(f'--answer_delay must be non-negative, got {bandit_args.answer_delay}')
  args = learn_atari.parse_args(
      argv, description=__doc__.split('\n')[0],
      agent_defaults={'vtrace': learn_atari.VTRACE_ENTRY_POINT_TRAINING}, frame_budget=2e5,
      target=45., learning_rate=1e-4, reward_scaling=0.1, max_minutes=10)
  delay = bandit_args.answer_delay
  learn_atari.run_and_report(
      args, f'atari {args.agent} path on the pixel bandit ({EPISODE_STEPS} steps, the side shown '
      f'{delay} frame(s) before rewarded: about {(EPISODE_STEPS - delay) / 6:.0f} for a uniform '
      f'policy, {(EPISODE_STEPS - delay) / 2:.0f} ignoring the frames, {EPISODE_STEPS - delay} '
      f'reading them), {args.stack_size} stacked frames, lr {args.learning_rate:g}, rewards '
      f'scaled by {args.reward_scaling:g}, batch {args.batch_size}', MODULE,
      [f'--answer_delay={delay}', f'--atari_main={learn_atari.MODULES[args.agent]}'])


def atari_main_of(argv: Sequence[str]) -> str:
  """The `--atari_main=MODULE` of a process's command line; V-trace's without one.

  Read before absl parses the flags, since the module defines the others.
  """
  module = learn_atari.MODULES['vtrace']
  for arg, following in zip(argv[1:], list(argv[2:]) + ['']):
    if arg.startswith('--atari_main='):
      module = arg[len('--atari_main='):]
    elif arg == '--atari_main':
      module = following
  if module not in ATARI_MAINS:
    raise SystemExit(f'--atari_main must be one of {", ".join(ATARI_MAINS)}, got {module!r}')
  return module


def define_flags(argv: Sequence[str]) -> types.ModuleType:
  """Defines the flags of the bench's learner and actors, those of the Atari entry point
  `argv` (a command line) names with `--atari_main` and `--answer_delay`, and returns that entry
  point (`seed_rl.evaluate` calls it too, to recreate the bandit)."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  module = importlib.import_module(atari_main_of(argv))
  flags.DEFINE_enum('atari_main', learn_atari.MODULES['vtrace'], ATARI_MAINS,
                    'The package\'s Atari entry point whose learner and network run on the bandit.')
  flags.DEFINE_integer('answer_delay', 1, 'The rewarded side is the one shown this many '
                       'frames before the current one.')
  return module


def run_mode_main() -> None:
  """The learner or an actor (`--run_mode`) of `--atari_main` on the bandit."""
  from absl import app  # pylint: disable=g-import-not-at-top
  atari_main = define_flags(sys.argv)
  app.run(functools.partial(atari_main.main, create_env_fn=create_environment))


if __name__ == '__main__':
  if any(arg.startswith('--run_mode') for arg in sys.argv[1:]):
    run_mode_main()
  else:
    main()
