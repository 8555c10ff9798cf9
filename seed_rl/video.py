"""Video frames of an environment being played, and the MP4 writer of `seed_rl.evaluate`.

`frame_source(env, config)` picks how to get an RGB image of `env` after every step (`config`: a
`VideoConfig`, the environment's name and action repeats):

- Atari (ALE): the emulator's RGB screen, `env.unwrapped.ale.getScreenRGB()` (210x160; the
  agent's 84x84 grey frames are not what a person wants to watch);
- Google Research Football: the Super Mini Map of the observation drawn in colour (the newest
  of the stacked frames, unpacked from `football.observation.PackedBitsObservation`'s uint16
  words);
- anything else: `env.render()`, which must return an `[H, W, 3]` image: Gymnasium envs created
  with `render_mode='rgb_array'` (the gym and MuJoCo factories take it from
  `config.render_mode`), DeepMind Lab (its RGB observation).

MuJoCo renders through OpenGL. Without a display and without `MUJOCO_GL`, `prepare_rendering`
picks EGL (a GPU driver's, or Mesa's software one), which needs no X server.

Frames smaller than `MIN_VIDEO_SIDE` pixels are enlarged by a whole factor (nearest neighbour),
and odd sizes padded to even ones (what H.264's yuv420p needs); other frames keep their size.
"""

import dataclasses
import math
import os
import traceback
from collections.abc import Callable
from typing import Any

from absl import flags
import gymnasium
import numpy as np

from seed_rl.environments.football import observation as football_observation

# The smaller side of a video frame is enlarged to at least this many pixels (96x72 SMM maps
# and DMLab frames would be hard to see).
MIN_VIDEO_SIDE = 256

# Agent steps per second of Google Research Football (its engine runs 10 steps a second).
FOOTBALL_FPS = 10

# SMM planes (left team, right team, ball, active player) and the colour each is drawn in, in
# drawing order: later ones are drawn over earlier ones.
_PITCH_RGB = (36, 110, 48)
_SMM_PLANES = ((0, (250, 220, 30)),   # left team: yellow
               (1, (60, 150, 255)),   # right team: blue
               (3, (230, 40, 40)),    # the active (controlled) player: red
               (2, (255, 255, 255)))  # ball: white

FrameFn = Callable[[Any], np.ndarray]


class RenderError(Exception):
  """The environment cannot give video frames; the message names it and says why."""


def prepare_rendering() -> None:
  """Lets environments render offscreen when there is no display (DISPLAY unset).

  MuJoCo gets `MUJOCO_GL=egl` unless MUJOCO_GL is set: Gymnasium otherwise tries GLFW first,
  which needs an X server and, failing, leaves the process unable to create any OpenGL context.
  SDL (pygame: the classic-control envs) gets its dummy video driver unless SDL_VIDEODRIVER is
  set, which it would otherwise look for and complain about. Call before creating the
  environment.
  """
  if not os.environ.get('DISPLAY'):
    if not os.environ.get('MUJOCO_GL'):
      os.environ['MUJOCO_GL'] = 'egl'
    os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')


def unpack_smm(packed: np.ndarray) -> np.ndarray:
  """NumPy inverse of `football.observation.packbits`: `<uint16>[H, W, K]` -> `<bool>[H, W, 16K]`.

  Channel `c` of a group of 16 sits in bit `8 * (c // 8) + 7 - c % 8` of its word (see
  `seed_rl/environments/football/observation.py`).
  """
  words = np.asarray(packed).astype(np.uint32)
  channels = np.arange(16, dtype=np.uint32)
  positions = 8 * (channels // 8) + 7 - channels % 8
  bits = (words[..., np.newaxis] >> positions) & 1
  return bits.reshape(words.shape[:-1] + (words.shape[-1] * 16,)) > 0


def smm_to_rgb(planes: np.ndarray) -> np.ndarray:
  """Draws the newest Super Mini Map of stacked `[H, W, 4k]` planes as an `<uint8>[H, W, 3]` image.

  gfootball stacks frames oldest first, each as the planes left team, right team, ball, active
  player; the last four channels are the newest frame.
  """
  planes = np.asarray(planes)
  if planes.ndim != 3 or planes.shape[-1] < 4:
    raise ValueError(f'Expected [H, W, 4k] SMM planes, got shape {planes.shape}.')
  newest = planes[..., -4:] > 0
  image = np.empty(newest.shape[:2] + (3,), np.uint8)
  image[...] = _PITCH_RGB
  for plane, colour in _SMM_PLANES:
    image[newest[..., plane]] = colour
  return image


def _wrappers(env: gymnasium.Env) -> list[gymnasium.Env]:
  """`env` and every env it wraps, outermost first."""
  chain = [env]
  while isinstance(chain[-1], gymnasium.Wrapper):
    chain.append(chain[-1].env)
  return chain


#: The flags that name an environment, in the order `VideoConfig.from_flags` reads them.
NAME_FLAGS = ('env_name', 'game')


@dataclasses.dataclass(frozen=True)
class VideoConfig:
  """What a video reads of the run's configuration.

  Attributes:
    env_name: the environment's name for messages (its `--env_name` or `--game`); None: the
      Gymnasium id or the class of the environment.
    num_action_repeats: frames per agent step (an Atari video plays at 60 / this frames per
      second, and an env without `render_fps` at the same rate).
  """
  env_name: str | None = None
  num_action_repeats: int = 1

  @classmethod
  def from_flags(cls, flag_values: flags.FlagValues) -> 'VideoConfig':
    """The config of the flags of any entry point: `env_name` from the first of `NAME_FLAGS`
    that it defines and sets, `num_action_repeats` from its flag when defined and set (an
    entry point defines the flags of its own environment only)."""
    values = [flag_values[name].value for name in NAME_FLAGS if name in flag_values]
    repeats = (flag_values['num_action_repeats'].value
               if 'num_action_repeats' in flag_values else None)
    return cls(next((str(value) for value in values if value), None), int(repeats or 1))


def env_name(env: gymnasium.Env, config: VideoConfig = VideoConfig()) -> str:
  """A name for messages: the Gymnasium id, else `config.env_name`, else the class."""
  spec = getattr(env.unwrapped, 'spec', None) or getattr(env, 'spec', None)
  if spec is not None and getattr(spec, 'id', None):
    return spec.id
  return config.env_name or type(env.unwrapped).__name__


def is_opengl_failure(error: BaseException) -> bool:
  """Whether `error` was raised in MuJoCo's or PyOpenGL's code (a missing OpenGL backend shows
  as errors of all kinds there, also while importing mujoco with MUJOCO_GL set)."""
  for frame, _ in traceback.walk_tb(error.__traceback__):
    path = frame.f_code.co_filename.replace(os.sep, '/')
    if '/OpenGL/' in path or '/mujoco/' in path:
      return True
  return False


def cannot_render(name: str, error: BaseException, mujoco: bool = False) -> RenderError:
  """The `RenderError` of `name` failing with `error` while rendering (or being created to
  render); says how to select MuJoCo's OpenGL backend when MuJoCo or OpenGL failed."""
  first_line = (str(error).strip().splitlines() or [''])[0]
  reason = f'{type(error).__name__}: {first_line}' if first_line else type(error).__name__
  if mujoco or is_opengl_failure(error):
    backend = os.environ.get('MUJOCO_GL')
    reason += (f' (MuJoCo renders offscreen through OpenGL and MUJOCO_GL='
               f'{backend or "<unset>"} did not work here: install a backend and select it, '
               "MUJOCO_GL=egl with a GPU driver or Mesa's libegl1, or MUJOCO_GL=osmesa with "
               'libosmesa6)')
  return RenderError(f'Cannot record a video of {name}: {reason}')


def _check_image(image: Any, name: str, how: str) -> np.ndarray:
  if image is None:
    raise RenderError(
        f'Cannot record a video of {name}: {how} returned no image (the environment factory '
        "must create it with render_mode='rgb_array', e.g. by reading config.render_mode).")
  image = np.asarray(image)
  if image.ndim != 3 or image.shape[-1] != 3:
    raise RenderError(f'Cannot record a video of {name}: {how} returned an array of shape '
                      f'{image.shape}, not an [H, W, 3] RGB image.')
  return image.astype(np.uint8, copy=False)


def frame_source(env: gymnasium.Env, config: VideoConfig = VideoConfig()
                 ) -> tuple[FrameFn, float]:
  """`(frame_fn, fps)`: `frame_fn(observation)` is the `<uint8>[H, W, 3]` image of `env` now.

  `frame_fn` raises `RenderError` (naming the environment and saying why) when the environment
  cannot give an image; take the first frame right after `reset` to find out early.
  """
  name = env_name(env, config)
  repeats = max(1, config.num_action_repeats)
  ale = getattr(env.unwrapped, 'ale', None)
  if ale is not None:
    frame_fn = lambda observation: ale.getScreenRGB()
    fps = 60. / repeats
    how = 'the ALE screen'
  elif any(isinstance(e, football_observation.PackedBitsObservation) for e in _wrappers(env)):
    frame_fn = lambda observation: smm_to_rgb(unpack_smm(observation))
    fps = float(FOOTBALL_FPS)
    how = 'the Super Mini Map'
  else:
    frame_fn = lambda observation: env.render()
    fps = float(env.metadata.get('render_fps') or 60. / repeats)
    how = 'env.render()'
  return _checked(frame_fn, env, name, how), fps


def _checked(frame_fn: FrameFn, env: gymnasium.Env, name: str, how: str) -> FrameFn:
  """`frame_fn` whose failures and non-images become `RenderError`s."""

  def checked(observation: Any) -> np.ndarray:
    try:
      image = frame_fn(observation)
    except Exception as e:  # Any renderer failure is reported the same way.
      is_mujoco = type(env.unwrapped).__module__.startswith('gymnasium.envs.mujoco')
      raise cannot_render(name, e, is_mujoco) from e
    return _check_image(image, name, how)

  return checked


def _enlargement(height: int, width: int) -> int:
  return max(1, math.ceil(MIN_VIDEO_SIDE / max(1, min(height, width))))


def video_frame(image: np.ndarray, scale: int) -> np.ndarray:
  """`image` enlarged `scale` times (nearest neighbour) and padded to even sides."""
  if scale > 1:
    image = np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)
  pad_h, pad_w = image.shape[0] % 2, image.shape[1] % 2
  if pad_h or pad_w:
    image = np.pad(image, ((0, pad_h), (0, pad_w), (0, 0)))
  return np.ascontiguousarray(image)


def video_size(height: int, width: int) -> tuple[int, int]:
  """`(height, width)` of the video of `[height, width, 3]` frames."""
  scale = _enlargement(height, width)
  return height * scale + (height * scale) % 2, width * scale + (width * scale) % 2


class VideoWriter:
  """Writes RGB frames to an MP4 (H.264 through imageio-ffmpeg's own ffmpeg binary).

  Every frame gets the enlargement and size of the first one.
  """

  def __init__(self, path: str, fps: float):
    self.path = path
    self.fps = fps
    self.num_frames = 0
    self._writer = None
    self._scale = 1
    self._shape = None

  @property
  def size(self) -> tuple[int, int] | None:
    """`(height, width)` of the video's frames (None before the first)."""
    return None if self._shape is None else video_size(*self._shape[:2])

  def append(self, image: np.ndarray) -> None:
    if self._writer is None:
      import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top
      self._shape = image.shape
      self._scale = _enlargement(*image.shape[:2])
      directory = os.path.dirname(os.path.abspath(self.path))
      os.makedirs(directory, exist_ok=True)
      self._writer = imageio.get_writer(self.path, format='FFMPEG', mode='I', fps=self.fps,
                                        codec='libx264', macro_block_size=2,
                                        ffmpeg_log_level='error')
    if image.shape != self._shape:
      raise RenderError(f'Video frames changed size from {self._shape} to {image.shape}.')
    self._writer.append_data(video_frame(image, self._scale))
    self.num_frames += 1

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._writer = None


class RecordFirstEpisode(gymnasium.Wrapper):
  """Writes the first episode of `env` to an MP4: the frame after its first `reset` and one
  after each step, until the episode ends (`length + 1` frames).

  The frames come from `frame_source(env, config)`; the first is taken at the first reset, so
  an environment that cannot render fails there with a `RenderError`.
  """

  def __init__(self, env: gymnasium.Env, path: str, config: VideoConfig = VideoConfig()):
    super().__init__(env)
    self._path = path
    self._config = config
    self._frame_fn = None
    self._writer = None
    self._recording = False

  def reset(self, **kwargs):
    observation, info = self.env.reset(**kwargs)
    if self._writer is None:
      self._frame_fn, fps = frame_source(self.env, self._config)
      self._writer = VideoWriter(self._path, fps)
      self._recording = True
      self._writer.append(self._frame_fn(observation))
    elif self._recording:  # Reset before the end of the first episode.
      self._stop()
    return observation, info

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    if self._recording:
      self._writer.append(self._frame_fn(observation))
      if terminated or truncated:
        self._stop()
    return observation, reward, terminated, truncated, info

  def _stop(self) -> None:
    self._recording = False
    self._writer.close()

  def summary(self) -> dict[str, Any] | None:
    """`{'video', 'video_frames', 'video_fps', 'video_size': (height, width)}`; None before
    the first reset."""
    if self._writer is None:
      return None
    return {'video': self._path, 'video_frames': self._writer.num_frames,
            'video_fps': self._writer.fps, 'video_size': self._writer.size}

  def close(self):
    if self._writer is not None:
      self._writer.close()
    return self.env.close()
