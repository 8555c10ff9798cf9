r"""Sanity check of the Atari learning path: a bandit whose answer is only in the pixels.

  python -m bench.pixel_bandit [--frame_budget 2e5] [--target 45] [bench.learn_atari's flags]

Every step shows an 84x84 frame with a white block on its left or its right half, at random;
the reward is 1 for action 0 on a left block or action 1 on a right one, else 0 (6 actions, 50
steps per episode: a uniform policy scores about 8, one that ignores the frame 25, one that
reads it 50). It runs `bench/learn_atari.py`'s learner, network and flags on it: uint8 frames
over the RPC layer, stacked inside the network, the Nature-DQN torso. When Pong does not learn,
this tells whether that path learns from pixels at all. Frames count 4 per step (the Atari
entry point's `--num_action_repeats`), so 200 per episode.

Its defaults differ from Pong's: `--learning_rate 1e-4 --reward_scaling 0.1` reached 45 after
17k frames with V-trace. With rewards unscaled the values start at 0 against returns near 50, and
the policy often settled on one action for every frame (25) within 20,000 frames: in each of 3
runs at the rate of 6e-4, in one run of two at 1e-4. `--agent ppo` (PPO's values are normalized,
so the scaling does not matter to it) reached 45 after 96k frames.
"""

import sys
from typing import Any

import gymnasium
import numpy as np

from bench import learn_atari
from bench import nature_entry_points

MODULE = 'bench.pixel_bandit'
EPISODE_STEPS = 50


class PixelBandit(gymnasium.Env):
  """The bandit above, its sides drawn from a generator seeded with the env id."""

  def __init__(self, seed: int):
    self.observation_space = gymnasium.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    self.action_space = gymnasium.spaces.Discrete(6)
    self._rng = np.random.default_rng(seed)
    self._side = 0
    self._steps = 0

  def _frame(self) -> np.ndarray:
    self._side = int(self._rng.integers(2))
    frame = np.zeros(self.observation_space.shape, np.uint8)
    columns = slice(5, 35) if self._side == 0 else slice(49, 79)
    frame[20:60, columns] = 255
    return frame

  def reset(self, *, seed=None, options=None):
    if seed is not None:
      self._rng = np.random.default_rng(seed)
    self._steps = 0
    return self._frame(), {}

  def step(self, action):
    reward = float(int(action) == self._side)
    self._steps += 1
    return self._frame(), reward, False, self._steps >= EPISODE_STEPS, {}


def create_environment(env_id: int, unused_config: Any) -> PixelBandit:
  """The learner's and actors' `create_env_fn`: a bandit seeded with the env id."""
  return PixelBandit(env_id)


def main() -> None:
  args = learn_atari.parse_args(description=__doc__.split('\n')[0], frame_budget=2e5,
                                target=45., learning_rate=1e-4, reward_scaling=0.1,
                                max_minutes=10)
  learn_atari.run_and_report(
      args, f'atari {args.agent} path on the pixel bandit ({EPISODE_STEPS} steps: about 8 for a '
      f'uniform policy, 25 ignoring the frame, 50 reading it), {args.stack_size} stacked frames, '
      f'lr {args.learning_rate:g}, rewards scaled by {args.reward_scaling:g}, batch '
      f'{args.batch_size}', MODULE)


if __name__ == '__main__':
  if any(arg.startswith('--run_mode') for arg in sys.argv[1:]):
    nature_entry_points.main(create_environment)
  else:
    main()
