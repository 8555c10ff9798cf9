"""Plays the policy a learner exported to its logdir, without actors, learner or GPU.

  python -m seed_rl.evaluate --logdir=/tmp/cartpole --episodes=10 --greedy --video=cartpole.mp4
  python -m seed_rl.evaluate --logdir=/tmp/cartpole --env_name=CartPole-v1  # a learner flag

The logdir tells how the learner ran (`seed_rl.common.learner_runtime.run_record`): the last line
of `runs.jsonl` names its entry point and environment factory, and `learner_flags.txt` holds its
flags. A child process without TensorFlow imports the entry point, parses those flags then the
extra `--flag=value` arguments, and creates one environment (`create_env_fn(0, FLAGS)`, see
`seed_rl.evaluation_env`). The policy in `saved_model/` plays it here, on the CPU, the way the
learner plays an actor's environment: the recurrent state and the previous action carry on from
step to step and across episodes; `done` is set with the first observation of every episode but
the very first, together with the last reward of the previous episode (the exported networks
restart their recurrent state where `done` is set).

Library use: `evaluate(logdir, episodes, greedy, video, overrides)` returns the returns and
lengths; the CLI (`main`) prints them and exits with status 2 after a clear error
(`EvaluateError`). A damaged logdir (a file emptied, cut short or not UTF-8, a directory where a
file belongs) is such an error: it names the file and what to do (`seed_rl.evaluation_files`). A script that calls `evaluate` needs no `if __name__ == '__main__':` guard:
the environment process never imports the caller's script.
"""

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from seed_rl import evaluation_env
from seed_rl import evaluation_files
from seed_rl.common.config import run_identity
from seed_rl.common.structures import EnvOutput

# What `seed_rl.common.learner_runtime.checkpoints` writes; the run record's files are named by
# `run_identity`.
SAVED_MODEL_DIR = evaluation_files.SAVED_MODEL_DIR

EvaluateError = evaluation_env.EvaluateError
RunInfo = evaluation_env.RunInfo


@dataclasses.dataclass
class Episode:
  """One evaluation episode: its return, raw return (`info['score_reward']`) and length."""
  episode_return: float
  raw_return: float | None
  length: int


# What to do about a damaged run record file: the flags that replace it.
_INSTEAD_OF_RUNS = ('restore it from a copy, or move it out of the logdir and pass '
                    '--entry_point=MODULE --create_env_fn=MODULE:FUNCTION instead.')
_INSTEAD_OF_FLAGS = ('restore it from a copy, or move it out of the logdir and pass '
                     '--entry_point=MODULE --create_env_fn=MODULE:FUNCTION and the learner\'s '
                     'flags as --flag=value (e.g. --env_name=CartPole-v1) instead.')


def _no_policy(logdir: str) -> EvaluateError:
  """The error for a `logdir` without `saved_model/`: it is missing, not a directory, a parent
  of run logdirs, or a logdir whose learner exported nothing."""
  if not evaluation_files.exists(logdir):
    return EvaluateError(f'logdir {logdir} does not exist: pass a learner\'s --logdir.')
  if not evaluation_files.is_remote(logdir) and not os.path.isdir(logdir):
    return EvaluateError(f'logdir {logdir} is not a directory: pass a learner\'s --logdir.')
  if os.path.basename(os.path.normpath(logdir)) == SAVED_MODEL_DIR:
    return EvaluateError(f'{logdir} is an exported policy, not a logdir: pass the logdir that '
                         f'holds it, --logdir={os.path.dirname(os.path.normpath(logdir))}.')
  runs = ([] if evaluation_files.is_remote(logdir) or run_identity.has_record(logdir)
          else run_identity.find_run_logdirs(logdir))
  if runs:
    more = f' and {len(runs) - 3} more' if len(runs) > 3 else ''
    return EvaluateError(f'{logdir} is not a run but holds runs ({", ".join(runs[:3])}{more}): '
                         'pass one of them as --logdir.')
  return EvaluateError(f'no exported policy in {logdir}: train with a learner first '
                       f'(learners export {SAVED_MODEL_DIR}/ with every checkpoint).')


def read_run_info(logdir: str, entry_point: str | None = None,
                  create_env_fn: str | None = None) -> RunInfo:
  """The entry point, environment factory, agent and flags of `logdir`'s last learner run.

  `entry_point` ('package.module') and `create_env_fn` ('package.module:function') replace
  what `runs.jsonl` says; with both, the logdir needs neither `runs.jsonl` nor
  `learner_flags.txt` (logdirs of learners older than those files). The entry point's file
  comes from the record (`run_identity.last_start`: its `argv` in older ones) unless
  `entry_point` replaces it.

  Raises:
    EvaluateError: no `saved_model/`, or a missing or damaged run record, naming the file.
  """
  if not evaluation_files.exists(os.path.join(logdir, SAVED_MODEL_DIR)):
    raise _no_policy(logdir)
  runs_file, flags_file = run_identity.RUNS_FILE, run_identity.FLAGS_FILE
  runs_path, flags_path = os.path.join(logdir, runs_file), os.path.join(logdir, flags_file)
  missing = [name for name, path in ((runs_file, runs_path), (flags_file, flags_path))
             if not evaluation_files.exists(path)]
  if missing and not (entry_point and create_env_fn):
    raise EvaluateError(
        f'{logdir} has no {" and no ".join(missing)} (learners write them when they start; '
        'this logdir is older): pass --entry_point=MODULE (e.g. '
        'seed_rl.environments.gym.vtrace_main) and --create_env_fn=MODULE:FUNCTION (e.g. '
        'seed_rl.environments.gym.env:create_environment), and the learner\'s flags as '
        '--flag=value (e.g. --env_name=CartPole-v1).')
  start = run_identity.Start()
  if runs_file not in missing:
    try:
      start = run_identity.last_start(
          evaluation_files.read_record_file(runs_path, _INSTEAD_OF_RUNS), runs_path)
    except run_identity.RecordError as e:
      raise EvaluateError(f'{e}: {_INSTEAD_OF_RUNS}') from e
  entry_point_file = None
  if not entry_point:
    entry_point, entry_point_file = start.entry_point, start.entry_point_file
  create_env_fn = create_env_fn or start.create_env_fn
  if not create_env_fn:
    raise EvaluateError(f'{runs_path} does not name the environment factory: pass '
                        '--create_env_fn=MODULE:FUNCTION.')
  learner_flags = (None if flags_file in missing else evaluation_files.read_record_file(
      flags_path, _INSTEAD_OF_FLAGS).splitlines())
  run = RunInfo(entry_point, create_env_fn, start.agent, learner_flags,
                entry_point_file)
  if not entry_point and not entry_point_file:
    raise EvaluateError(f'{runs_path} does not name the learner\'s entry point: '
                        f'{evaluation_env.how_to_name_the_entry_point(run)}')
  return run


def _use_cpu_only() -> None:
  """Hides GPUs from TensorFlow (one environment's policy runs faster on the CPU, and a learner
  training on the GPU keeps its memory); too late once TensorFlow has initialized them."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    tf.config.set_visible_devices([], 'GPU')
  except (RuntimeError, ValueError):
    pass


class Policy:
  """The exported policy for one environment: `step` returns the action and keeps the state."""

  def __init__(self, saved_model_dir: str, greedy: bool = False):
    """Loads the policy exported to `saved_model_dir`.

    Raises:
      EvaluateError: it is missing, damaged (naming the file) or has no such policy.
    """
    evaluation_files.check_saved_model_files(saved_model_dir)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._tf = tf
    try:
      with tf.device('/CPU:0'):
        self._loaded = tf.saved_model.load(saved_model_dir)
    except Exception as e:  # noqa: BLE001  (a damaged file raises many kinds)
      raise evaluation_files.load_failure(saved_model_dir, e) from e
    name = 'get_greedy_action' if greedy else 'get_action'
    if not hasattr(self._loaded, name):
      raise EvaluateError(f'The policy in {saved_model_dir} has no {name} (exported by an '
                          'older seed_rl); train again, or evaluate without --greedy.')
    self._function = getattr(self._loaded, name)
    (self._action_spec, self._env_output_spec, _), _ = (
        self._function.concrete_functions[0].structured_input_signature)

  def initial_state(self) -> Any:
    """The recurrent state of a new episode, batch size 1."""
    with self._tf.device('/CPU:0'):
      return self._loaded.initial_state(1)

  def zero_action(self) -> Any:
    """The previous action of the very first step (what the learner starts with)."""
    spec = self._action_spec
    return self._tf.zeros([1] + spec.shape[1:].as_list(), spec.dtype)

  def _tensor(self, spec: Any, value: Any) -> Any:
    value = np.asarray(value)[np.newaxis]
    if not spec.shape.is_compatible_with(value.shape):
      raise EvaluateError(
          f'The environment gives {spec.name} of shape {list(value.shape[1:])} but the policy '
          f'takes {spec.shape[1:].as_list()}: evaluate it on the environment it was trained '
          'on.')
    return self._tf.convert_to_tensor(value, spec.dtype)

  def step(self, prev_action: Any, env_output: EnvOutput, state: Any) -> tuple[Any, Any]:
    """`(action [1, ...] tensor, new state)` for one step of unbatched `env_output` values."""
    tf = self._tf
    inputs = tf.nest.map_structure(self._tensor, self._env_output_spec, env_output)
    with tf.device('/CPU:0'):
      agent_outputs, state = self._function(prev_action, inputs, state)
    return agent_outputs[0], state


def play(env: Any, policy: Policy, num_episodes: int, seed: int | None = None,
         on_episode: Callable[[int, Episode], None] | None = None) -> list[Episode]:
  """Plays `num_episodes` episodes of `env` with `policy`, as the learner plays an actor's env.

  Args:
    env: a Gymnasium env, or an `evaluation_env.EnvironmentProcess`.
    policy: the exported policy.
    num_episodes: episodes to play.
    seed: seed of the first `reset` (the next ones continue the env's random stream, as
      actors do); None: unseeded.
    on_episode: called with the index and result of each finished episode.
  """
  state = policy.initial_state()
  prev_action = policy.zero_action()
  reward, done, abandoned = 0., False, False
  episodes = []
  for index in range(num_episodes):
    observation, _ = env.reset(seed=seed if index == 0 else None)
    episode_return, raw_return, has_raw_return, length = 0., 0., False, 0
    while True:
      env_output = EnvOutput(np.float32(reward), done, observation, abandoned, np.int32(length))
      prev_action, state = policy.step(prev_action, env_output, state)
      done = abandoned = False
      observation, reward, terminated, truncated, info = env.step(prev_action.numpy()[0])
      length += 1
      episode_return += float(reward)
      if 'score_reward' in info:
        has_raw_return = True
      raw_return += float(info.get('score_reward', reward))
      if terminated or truncated:
        break
    # The first step of the next episode carries done and the last reward of this one.
    done = True
    abandoned = bool(info.get('abandoned', False) or (truncated and not terminated))
    episode = Episode(episode_return, raw_return if has_raw_return else None, length)
    episodes.append(episode)
    if on_episode:
      on_episode(index, episode)
  return episodes


def format_episode(index: int, episode: Episode) -> str:
  raw = '' if episode.raw_return is None else f', raw return {episode.raw_return:g}'
  return f'Episode {index + 1}: return {episode.episode_return:g}{raw}, length {episode.length}'


def format_summary(result: dict[str, Any]) -> str:
  raw = ''
  if result['raw_returns'] is not None:
    raw = (f', raw return {np.mean(result["raw_returns"]):.2f} ± '
           f'{np.std(result["raw_returns"]):.2f}')
  return (f'{len(result["returns"])} episodes of {result["env"]} '
          f'({"greedy" if result["greedy"] else "sampled"} actions): return '
          f'{result["mean_return"]:.2f} ± {result["std_return"]:.2f}{raw}, length '
          f'{result["mean_length"]:.1f} ± {result["std_length"]:.1f}')


def evaluate(logdir: str, episodes: int = 10, greedy: bool = False, video: str | None = None,
             overrides: Sequence[str] = (), seed: int | None = None,
             entry_point: str | None = None, create_env_fn: str | None = None,
             verbose: bool = False) -> dict[str, Any]:
  """Plays `episodes` episodes with the policy exported to `logdir`.

  Args:
    logdir: a learner's `--logdir` (local or a `gs://` URL).
    episodes: number of episodes.
    greedy: act with the mode of the action distribution (`get_greedy_action`) rather than
      the policy's own actions (V-trace and SAC sample; R2D2 is greedy either way).
    video: path of an MP4 of the first episode: the frame after the reset and one per step.
    overrides: `--flag=value` arguments applied after the learner's flags (e.g.
      `['--env_name=CartPole-v1']`).
    seed: seed of the environment's first reset and of TensorFlow's sampling.
    entry_point, create_env_fn: replace those of `runs.jsonl` (needed for logdirs without it,
      or when its entry point does not import here); a `create_env_fn` of `__main__:NAME` is
      NAME in the entry point.
    verbose: print one line per episode and the summary.

  Returns:
    A dict with `returns`, `raw_returns` (None unless the env gives `info['score_reward']`),
    `lengths` (agent steps), `mean_return`, `std_return`, `mean_length`, `std_length` (the
    standard deviation over the episodes), `env`, `entry_point`, `create_env_fn`, `agent`,
    `greedy`, `seed` and `video` (None without one); with a video also `video_frames`,
    `video_fps` and `video_size` (`(height, width)`).

  Raises:
    EvaluateError: a problem with the logdir, the flags, the environment or its rendering.
  """
  if int(episodes) < 1:
    raise EvaluateError(f'--episodes must be at least 1, got {episodes}.')
  run = read_run_info(logdir, entry_point, create_env_fn)
  env = evaluation_env.EnvironmentProcess(run, overrides, video, seed)
  try:
    env_name = env.wait_ready()  # Bad flags or rendering show here, before TensorFlow loads.
    saved_model_dir = os.path.join(logdir, SAVED_MODEL_DIR)
    # Missing or empty files show before TensorFlow loads too (`Policy` checks them as well).
    evaluation_files.check_saved_model_files(saved_model_dir)
    _use_cpu_only()
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if seed is not None:
      tf.random.set_seed(seed)
    policy = Policy(saved_model_dir, greedy)
    if verbose:
      print(f'Evaluating {logdir}: the {run.agent or "exported"} policy of {run.program()} '
            f'on {env_name}', flush=True)
    on_episode = (lambda i, episode: print(format_episode(i, episode), flush=True)
                  ) if verbose else None
    played = play(env, policy, int(episodes), seed, on_episode)
  except BaseException:
    env.close(raise_errors=False)
    raise
  summary = env.close()
  returns = [e.episode_return for e in played]
  lengths = [e.length for e in played]
  raw_returns = ([e.episode_return if e.raw_return is None else e.raw_return for e in played]
                 if any(e.raw_return is not None for e in played) else None)
  result = {'env': env_name, 'entry_point': run.entry_point, 'create_env_fn': run.create_env_fn,
            'agent': run.agent, 'greedy': bool(greedy), 'seed': seed, 'video': None,
            'returns': returns, 'raw_returns': raw_returns, 'lengths': lengths,
            'mean_return': float(np.mean(returns)), 'std_return': float(np.std(returns)),
            'mean_length': float(np.mean(lengths)), 'std_length': float(np.std(lengths))}
  result.update(summary or {})
  if verbose:
    print(format_summary(result), flush=True)
    if video:
      height, width = result['video_size']
      print(f'Video of episode 1: {video} ({result["video_frames"]} frames, {width}x{height}, '
            f'{result["video_fps"]:g} fps)', flush=True)
  return result


def _argument_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='python -m seed_rl.evaluate', allow_abbrev=False,
      description='Plays the policy a learner exported to its logdir and prints the returns. '
                  'Other --flag=value arguments override the learner\'s flags (e.g. '
                  '--env_name=...).')
  parser.add_argument('--logdir', required=True, help='the learner\'s --logdir')
  parser.add_argument('--episodes', type=int, default=10, help='episodes to play (10)')
  parser.add_argument('--greedy', action='store_true',
                      help='act with the mode of the action distribution')
  parser.add_argument('--video', help='write an MP4 of the first episode to this path')
  parser.add_argument('--seed', type=int, help='seed of the first reset and of the sampling')
  parser.add_argument('--entry_point',
                      help='the learner\'s entry point module (default: from runs.jsonl)')
  parser.add_argument('--create_env_fn',
                      help='the environment factory, MODULE:FUNCTION (default: from runs.jsonl)')
  return parser


def main(argv: Sequence[str] | None = None) -> int:
  """The CLI: prints one line per episode and the summary; 0, or 2 after an error line."""
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  parser = _argument_parser()
  options, overrides = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
  try:
    evaluate(options.logdir, options.episodes, options.greedy, options.video, overrides,
             options.seed, options.entry_point, options.create_env_fn, verbose=True)
  except EvaluateError as e:
    print(f'seed_rl.evaluate: error: {e}', file=sys.stderr, flush=True)
    return 2
  except KeyboardInterrupt:
    return 130
  return 0


if __name__ == '__main__':
  sys.exit(main())
