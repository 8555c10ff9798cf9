"""Atari preprocessing in the style of Dopamine (Machado et al., 2018).

`AtariPreprocessing` wraps a Gymnasium ALE env that advances **one emulator
frame per step** (frameskip 1 in ALE) and:
- repeats each agent action `frame_skip` times, summing the rewards and
  stopping early at the end of an episode (optionally on a life loss);
- takes the grayscale screens of the last two of those frames, max-pools them
  (removes Atari sprite flicker) and resizes to `screen_size` x `screen_size`
  with bilinear interpolation (OpenCV), giving `Box(0, 255, [84, 84, 1], uint8)`;
- optionally applies a random number of no-op actions at reset.

Difference from the original SEED RL code (a fix): with `frame_skip == 1` the
original wrote the new frame into the second buffer but returned the first
one, which is only written at reset, so the observation stayed frozen on the
reset frame for the whole episode. Here the latest frame always lands in the
buffer that is returned.

Actor-side module: numpy, OpenCV and Gymnasium only (no TensorFlow).
"""

from typing import Any

import cv2
import gymnasium
import numpy as np


class AtariPreprocessing(gymnasium.Wrapper):
  """Frame skipping, max-pooling, grayscale and resize for ALE envs.

  Uses the Gymnasium 5-tuple API. `terminated` is the game's end (or a life
  loss with `terminal_on_life_loss`); `truncated` comes unchanged from the
  wrapped env (e.g. the `TimeLimit` that counts emulator frames below this
  wrapper). The `info` dict is the one of the last inner step.
  """

  def __init__(self,
               environment: gymnasium.Env,
               frame_skip: int = 4,
               terminal_on_life_loss: bool = False,
               screen_size: int = 84,
               max_random_noops: int = 0):
    """Creates the wrapper.

    Args:
      environment: a Gymnasium ALE env stepping one emulator frame per
        `step` (its `unwrapped.ale` gives the screen).
      frame_skip: number of emulator frames per agent step (> 0).
      terminal_on_life_loss: whether a lost life ends the episode
        (`terminated=True`); the next `reset` then restarts the game.
      screen_size: side of the square output image (> 0).
      max_random_noops: at reset, apply `randint(1, max_random_noops)` no-op
        actions (upper bound exclusive, as the original; 1 means exactly one
        no-op). 0 disables them.

    Raises:
      ValueError: on a non-positive `frame_skip` or `screen_size`, a negative
        `max_random_noops`, or an env without an ALE.
    """
    super().__init__(environment)
    if frame_skip <= 0:
      raise ValueError(
          f'Frame skip should be strictly positive, got {frame_skip}')
    if screen_size <= 0:
      raise ValueError(
          f'Target screen size should be strictly positive, got {screen_size}')
    if max_random_noops < 0:
      raise ValueError(
          f'max_random_noops should be non-negative, got {max_random_noops}')
    ale = getattr(environment.unwrapped, 'ale', None)
    if ale is None:
      raise ValueError(
          f'AtariPreprocessing needs an ALE environment (with .unwrapped.ale), '
          f'got {environment!r}')

    self.frame_skip = int(frame_skip)
    self.terminal_on_life_loss = terminal_on_life_loss
    self.screen_size = int(screen_size)
    self.max_random_noops = int(max_random_noops)
    self._ale = ale

    height, width = ale.getScreenDims()
    # Two most recent grayscale frames; they are max-pooled when
    # frame_skip > 1. Buffer 0 always holds the latest frame.
    self.screen_buffer = [
        np.empty((height, width), dtype=np.uint8),
        np.empty((height, width), dtype=np.uint8),
    ]
    self.lives = 0
    self.game_over = False
    self.observation_space = gymnasium.spaces.Box(
        low=0, high=255, shape=(self.screen_size, self.screen_size, 1),
        dtype=np.uint8)

  def _noop_count(self) -> int:
    if self.max_random_noops <= 1:
      return self.max_random_noops
    return int(self.env.np_random.integers(1, self.max_random_noops))

  def apply_random_noops(self) -> None:
    """Steps the game with action 0 a random number of times (see __init__)."""
    for _ in range(self._noop_count()):
      _, _, terminated, truncated, _ = self.env.step(0)
      if terminated or truncated:
        self.env.reset()

  def reset(self,
            *,
            seed: int | None = None,
            options: dict[str, Any] | None = None
           ) -> tuple[np.ndarray, dict[str, Any]]:
    """Resets the game (with random no-ops) and returns `(observation, info)`."""
    _, info = self.env.reset(seed=seed, options=options)
    self.apply_random_noops()
    self.lives = self._ale.lives()
    self.game_over = False
    self._fetch_grayscale_observation(self.screen_buffer[0])
    self.screen_buffer[1].fill(0)
    return self._pool_and_resize(), info

  def step(self, action: Any
          ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
    """Repeats `action` for `frame_skip` frames.

    Returns:
      `(observation, summed reward, terminated, truncated, info)`. When the
      episode ends before the last repeat, the loop stops there and (as in
      Dopamine) the observation pools the frames fetched so far.
    """
    accumulated_reward = 0.0
    terminated = truncated = False
    is_terminal = False
    info: dict[str, Any] = {}
    for time_step in range(self.frame_skip):
      _, reward, terminated, truncated, info = self.env.step(action)
      accumulated_reward += reward

      if self.terminal_on_life_loss:
        new_lives = self._ale.lives()
        is_terminal = terminated or new_lives < self.lives
        self.lives = new_lives
      else:
        is_terminal = terminated

      if is_terminal or truncated:
        break
      if time_step >= self.frame_skip - 2:
        # The last frame goes to buffer 0, the one before it to buffer 1
        # (so frame_skip == 1 returns the latest frame: the fix).
        self._fetch_grayscale_observation(
            self.screen_buffer[self.frame_skip - 1 - time_step])

    self.game_over = bool(terminated or truncated)
    return (self._pool_and_resize(), accumulated_reward, bool(is_terminal),
            bool(truncated), info)

  def _fetch_grayscale_observation(self, output: np.ndarray) -> np.ndarray:
    """Writes the current grayscale screen into `output` (no allocation)."""
    self._ale.getScreenGrayscale(output)
    return output

  def _pool_and_resize(self) -> np.ndarray:
    """Max-pools the two buffers (frame_skip > 1) and resizes buffer 0."""
    if self.frame_skip > 1:
      np.maximum(self.screen_buffer[0], self.screen_buffer[1],
                 out=self.screen_buffer[0])
    transformed = cv2.resize(
        self.screen_buffer[0], (self.screen_size, self.screen_size),
        interpolation=cv2.INTER_LINEAR)
    return np.asarray(transformed, dtype=np.uint8)[..., np.newaxis]
