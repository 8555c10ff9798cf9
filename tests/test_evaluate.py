"""seed_rl.evaluate end to end: learners train, then the CLI and the library play their exports.

The V-trace check is exact. After training, the training actor is killed: no more unrolls come,
training pauses and the parameters stay those the learner exports when it stops. The
evaluation actor is restarted (as `tests/episode_logging_actor.py`, which logs every episode:
the learner logs episodes only when it trains). Its environment (id 1) starts afresh: the
learner resets its recurrent state and previous action, and the actor resets it with seed
`--seed` + 1 and continues that random stream for the next episodes. So `evaluate --greedy
--seed=2` on the exported policy must play the very episodes the learner then plays greedily in
its evaluation environment, with the same returns.

Everything runs in fresh processes: absl flags are global to a process, and MuJoCo's software
OpenGL and TensorFlow cannot share one.
"""

import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from seed_rl.launch import progress_monitor
from tests import evaluate_helpers
from tests.processes import ROOT, Process, Processes, frames_progress

VTRACE_MAIN = 'seed_rl.environments.gym.vtrace_main'
LOGGING_ACTOR = 'tests.episode_logging_actor'
R2D2_MAIN = 'seed_rl.environments.gym.r2d2_main'
SEED = 1
EVAL_ENV_SEED = SEED + 1  # The evaluation environment has id 1.
REPLAYED_EPISODES = 3
# Mean return of uniformly random actions on CartPole-v1 (about 22; always one action: about 9).
RANDOM_RETURN = 22
LOGGED_EPISODE = r'Episode of env 1: return ([-\d.e+]+) length (\d+)'


def _environment(**extra):
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=str(ROOT), **extra)


def _start(arguments, **extra_environment):
  return subprocess.Popen([sys.executable] + list(arguments), cwd=ROOT, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=_environment(**extra_environment))


def _evaluate_cli(*arguments, **extra_environment):
  return _start(['-m', 'seed_rl.evaluate'] + list(arguments), **extra_environment)


def _finish(process, timeout=120):
  """`(returncode, stdout, stderr)` of a process started by `_start`."""
  try:
    stdout, stderr = process.communicate(timeout=timeout)
  finally:
    if process.poll() is None:
      process.kill()
  return process.returncode, stdout, stderr


def _episode_lines(stdout):
  """`[(return, length)]` of the CLI's episode lines."""
  return [(float(r), int(n)) for r, n in
          re.findall(r'^Episode \d+: return ([-\d.e+]+), length (\d+)$', stdout, re.MULTILINE)]


def _flags(tmp_path, **overrides):
  values = dict(server_address=f'unix:{tmp_path}/learner.sock', logdir=tmp_path / 'logdir',
                num_envs=2, env_batch_size=1, inference_batch_size=1, seed=SEED,
                total_environment_frames=10**6, save_checkpoint_secs=10**5)
  values.update(overrides)
  return [f'--{name}={value}' for name, value in values.items()]


def _eval_returns(log):
  return progress_monitor.parse_episode_returns(log, 'eval')


@pytest.fixture(scope='module')
def vtrace_run(tmp_path_factory):
  """Trains V-trace on CartPole until its greedy evaluation returns are well above random,
  pauses training and replays the evaluation environment from a fresh actor; returns the
  logdir, the learner's last evaluation returns before the pause and the replayed returns."""
  tmp_path = tmp_path_factory.mktemp('vtrace')
  flags = _flags(tmp_path, num_eval_envs=1, unroll_length=20, batch_size=4,
                 learning_rate=3e-3, entropy_cost=0.01)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', VTRACE_MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', VTRACE_MAIN,
                              flags + ['--run_mode=actor', f'--task={task}']) for task in (0, 1)]
    deadline = time.time() + 150
    while True:
      returns = _eval_returns(learner.log())
      if (frames_progress(learner) >= 5000 and len(returns) >= 3 and
          min(returns[-3:]) >= 5 * RANDOM_RETURN):
        last_logged = returns[-3:]
        break
      assert learner.popen.poll() is None, learner.log()[-3000:]
      assert time.time() < deadline, f'greedy returns stayed low: {returns[-10:]}'
      time.sleep(0.5)
    actors[0].kill()  # No more unrolls: training pauses, the policy stays what gets exported.
    actors[1].kill()
    time.sleep(1)
    replay = processes.start('actor_1_logging', LOGGING_ACTOR,
                             flags + ['--run_mode=actor', '--task=1'])
    replay.wait_for(LOGGED_EPISODE, timeout=60, count=REPLAYED_EPISODES)
    learner.signal(signal.SIGTERM)
    assert learner.wait(60) == 0, learner.log()[-3000:]
    assert 'Training finished' in learner.log()
    replayed = [float(r) for r, _ in re.findall(LOGGED_EPISODE, replay.log())]
  return {'logdir': str(tmp_path / 'logdir'), 'last_logged': last_logged,
          'replayed': replayed[:REPLAYED_EPISODES],
          'video': str(tmp_path / 'videos' / 'cartpole.mp4')}


@pytest.fixture(scope='module')
def vtrace_evaluations(vtrace_run):
  """Two evaluations of the V-trace export at once (each loads TensorFlow): the library,
  twice in one process, and the CLI with a video of one episode."""
  library = _start(['-m', 'tests.evaluate_helpers', vtrace_run['logdir'], str(EVAL_ENV_SEED),
                    str(REPLAYED_EPISODES)])
  cli = _evaluate_cli(f'--logdir={vtrace_run["logdir"]}', '--greedy', f'--seed={EVAL_ENV_SEED}',
                      '--episodes=1', f'--video={vtrace_run["video"]}')
  yield {'library': library, 'cli': cli}
  for process in (library, cli):
    if process.poll() is None:
      process.kill()


@pytest.mark.timeout(300)
def test_greedy_evaluation_replays_the_learners_evaluation_episodes(vtrace_run,
                                                                     vtrace_evaluations):
  returncode, stdout, stderr = _finish(vtrace_evaluations['library'])
  assert returncode == 0, stderr[-3000:]
  first, second = json.loads(stdout)
  replayed = vtrace_run['replayed']
  # Trained: the fixture paused training after greedy returns of at least 5 x random play;
  # the exported policy's (training moved on a little since) still show that it acts on what
  # it observes (one action all along returns about 9).
  assert np.mean(replayed) >= RANDOM_RETURN, vtrace_run
  assert first['returns'] == replayed, (first, vtrace_run)
  assert first['lengths'] == [int(r) for r in replayed]  # CartPole: reward 1 per step.
  assert second == first  # Deterministic with the same seed.
  assert first['mean_return'] == pytest.approx(np.mean(replayed))
  assert first['std_return'] == pytest.approx(np.std(replayed))
  assert (first['agent'], first['env'], first['raw_returns'], first['video']) == (
      'VTRACE', 'CartPole-v1', None, None)


@pytest.mark.timeout(300)
def test_video_of_the_first_episode(vtrace_run, vtrace_evaluations):
  import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top

  returncode, stdout, stderr = _finish(vtrace_evaluations['cli'])
  assert returncode == 0, stderr[-3000:]
  assert f'the VTRACE policy of {VTRACE_MAIN} on CartPole-v1' in stdout
  [(episode_return, length)] = _episode_lines(stdout)
  assert episode_return == vtrace_run['replayed'][0]
  assert re.search(r'^1 episodes of CartPole-v1 \(greedy actions\): return [\d.]+ ± 0\.00, '
                   r'length [\d.]+ ± 0\.0$', stdout, re.MULTILINE), stdout
  # The frame after the reset, then one per step; CartPole renders 600x400 at 50 fps.
  assert f'({length + 1} frames, 600x400, 50 fps)' in stdout
  reader = imageio.get_reader(vtrace_run['video'], format='FFMPEG')
  assert reader.get_meta_data()['fps'] == 50
  shapes = set()
  for index, frame in enumerate(reader):
    shapes.add(frame.shape)
    if index == 0:
      assert frame.std() > 10  # A drawing, not a blank frame.
  assert index + 1 == length + 1
  assert shapes == {(400, 600, 3)}


def _expect_error(process, *fragments, timeout=120):
  returncode, stdout, stderr = _finish(process, timeout)
  assert returncode == 2, (returncode, stdout[-2000:], stderr[-3000:])
  lines = [line for line in stderr.splitlines() if line.startswith('seed_rl.evaluate: error:')]
  assert len(lines) == 1, stderr[-3000:]
  for fragment in fragments:
    assert fragment in lines[0], lines[0]
  return lines[0]


def _fake_logdir(path, runs=True, learner_flags=True, record=None):
  """A logdir as a V-trace learner starts it (or as `record` says), with an empty
  `saved_model/`."""
  (path / 'saved_model').mkdir(parents=True)
  if runs:
    record = record or {'entry_point': VTRACE_MAIN, 'agent': 'VTRACE',
                        'create_env_fn': 'seed_rl.environments.gym.env:create_environment'}
    (path / 'runs.jsonl').write_text(json.dumps(record) + '\n')
  if learner_flags:
    (path / 'learner_flags.txt').write_text('--env_name=CartPole-v1\n--nott_check_filter\n')
  return path


@pytest.mark.timeout(120)
def test_logdir_errors(tmp_path):
  (tmp_path / 'empty').mkdir()
  processes = [
      _evaluate_cli(f'--logdir={tmp_path / "empty"}'),
      _evaluate_cli(f'--logdir={_fake_logdir(tmp_path / "old", False, False)}'),
      _evaluate_cli(f'--logdir={_fake_logdir(tmp_path / "no_flags", learner_flags=False)}'),
      _evaluate_cli(f'--logdir={_fake_logdir(tmp_path / "new")}', '--no_such_flag=1'),
      _evaluate_cli(f'--logdir={tmp_path / "new"}', '--env_name=NoSuchEnv-v0'),
  ]
  _expect_error(processes[0], f'no exported policy in {tmp_path / "empty"}: train with a '
                'learner first')
  _expect_error(processes[1], 'has no runs.jsonl and no learner_flags.txt', '--entry_point=',
                '--create_env_fn=')
  message = _expect_error(processes[2], 'has no learner_flags.txt', '--entry_point=',
                          '--create_env_fn=')
  assert 'runs.jsonl' not in message
  _expect_error(processes[3], f'Invalid flags for {VTRACE_MAIN}', 'no_such_flag')
  _expect_error(processes[4], "Cannot create Gymnasium environment 'NoSuchEnv-v0'")


def _count_frames(path):
  """`(number of frames, shape of the first, its standard deviation)` of a video."""
  import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top

  count, first = 0, None
  for frame in imageio.get_reader(path, format='FFMPEG'):
    count += 1
    first = frame if first is None else first
  return count, first.shape, float(first.std())


@pytest.mark.timeout(120)
def test_mujoco_video_and_environments_that_cannot_render(vtrace_run, tmp_path):
  logdir = f'--logdir={vtrace_run["logdir"]}'
  mujoco = ['--create_env_fn=tests.evaluate_helpers:create_two_action_mujoco_env',
            '--env_name=InvertedPendulum-v5']
  # MuJoCo renders through EGL by default without a display: Mesa's software renderer here,
  # which crashes a process that also holds TensorFlow (the environment has its own).
  renders = _evaluate_cli(logdir, '--greedy', '--episodes=1', '--seed=0',
                          f'--video={tmp_path / "pendulum.mp4"}', *mujoco, MUJOCO_GL='',
                          DISPLAY='')
  video = f'--video={tmp_path / "out.mp4"}'
  no_render = _evaluate_cli(logdir, video, '--create_env_fn=tests.evaluate_helpers:'
                            'create_environment_without_render')
  # Mesa has no OSMesa library here; MuJoCo cannot render then.
  osmesa = _evaluate_cli(logdir, video, *mujoco, MUJOCO_GL='osmesa')
  _expect_error(no_render, 'Cannot record a video of CartPole-v1: env.render() returned no '
                "image (the environment factory must create it with render_mode='rgb_array'")
  _expect_error(osmesa, 'Cannot record a video of InvertedPendulum-v5: ',
                'MUJOCO_GL=osmesa did not work here', 'MUJOCO_GL=egl')
  assert not (tmp_path / 'out.mp4').exists() or (tmp_path / 'out.mp4').stat().st_size == 0
  returncode, stdout, stderr = _finish(renders)
  assert returncode == 0, stderr[-3000:]
  [(_, length)] = _episode_lines(stdout)
  assert f'({length + 1} frames, 480x480, 25 fps)' in stdout
  count, shape, deviation = _count_frames(tmp_path / 'pendulum.mp4')
  assert (count, shape) == (length + 1, (480, 480, 3)) and deviation > 1


@pytest.mark.timeout(240)
def test_r2d2_export_evaluates(tmp_path):
  """R2D2's export (int32 actions, an LSTM state fed the previous action and reward) plays
  through the CLI, also from a logdir without a run record given how the learner ran."""
  flags = _flags(tmp_path, batch_size=8, replay_buffer_min_size=8)
  with Processes(tmp_path) as processes:
    learner = processes.start('learner', R2D2_MAIN, flags + ['--run_mode=learner'])
    actors = [processes.start(f'actor_{task}', R2D2_MAIN,
                              flags + ['--run_mode=actor', f'--task={task}']) for task in (0, 1)]
    learner.wait_for(r'Saving checkpoint and SavedModel at iteration 0', timeout=120)
    for actor in actors:  # The learner serves them (its first training step compiles slowly).
      actor.wait_for(r'Actor steps: \d+', timeout=60)
    learner.signal(signal.SIGTERM)
    assert learner.wait(60) == 0, learner.log()[-3000:]
  logdir = tmp_path / 'logdir'
  # A logdir of a learner older than runs.jsonl and learner_flags.txt: the user says how it ran.
  old_logdir = tmp_path / 'old_logdir'
  shutil.copytree(logdir / 'saved_model', old_logdir / 'saved_model')
  runs = [_evaluate_cli(f'--logdir={logdir}', '--episodes=2', '--seed=5'),
          _evaluate_cli(f'--logdir={old_logdir}', '--episodes=2', '--seed=5',
                        f'--entry_point={R2D2_MAIN}',
                        '--create_env_fn=seed_rl.environments.gym.env:create_environment',
                        '--env_name=CartPole-v1')]
  outputs = []
  for process in runs:
    returncode, stdout, stderr = _finish(process)
    assert returncode == 0, stderr[-3000:]
    outputs.append(stdout)
  assert f'the R2D2 policy of {R2D2_MAIN} on CartPole-v1' in outputs[0]
  assert f'the exported policy of {R2D2_MAIN} on CartPole-v1' in outputs[1]
  episodes = _episode_lines(outputs[0])
  assert len(episodes) == 2 and all(r == n >= 1 for r, n in episodes), outputs[0]
  assert _episode_lines(outputs[1]) == episodes  # R2D2 acts greedily: same seed, same play.


# Frame sources, without a policy (TensorFlow-free and fast).

def test_packed_smm_unpacks_and_draws_in_colour():
  from seed_rl import video  # pylint: disable=g-import-not-at-top
  from seed_rl.environments.football import observation  # pylint: disable=g-import-not-at-top

  planes = np.random.default_rng(0).random((72, 96, 16)) < 0.1
  unpacked = video.unpack_smm(observation.packbits(planes.astype(np.uint8) * 255))
  np.testing.assert_array_equal(unpacked, planes)
  newest = np.zeros((72, 96, 16), bool)
  newest[10, 20, 12] = newest[30, 40, 13] = newest[50, 60, 14] = newest[10, 20, 15] = True
  newest[0, 0, 0] = True  # An older frame's left team: not drawn.
  image = video.smm_to_rgb(newest)
  assert image.shape == (72, 96, 3) and image.dtype == np.uint8
  assert tuple(image[0, 0]) == video._PITCH_RGB
  assert tuple(image[10, 20]) == (230, 40, 40)  # The active player over the left team.
  assert tuple(image[30, 40]) == (60, 150, 255)  # The right team.
  assert tuple(image[50, 60]) == (255, 255, 255)  # The ball.
  assert video.video_size(72, 96) == (288, 384)
  assert video.video_frame(image, 4).shape == (288, 384, 3)
  assert video.video_size(400, 600) == (400, 600)
  assert video.video_size(210, 160) == (420, 320)


def test_the_video_config_of_any_entry_point_s_flags():
  from absl import flags  # pylint: disable=g-import-not-at-top
  from seed_rl import video  # pylint: disable=g-import-not-at-top

  atari = flags.FlagValues()
  flags.DEFINE_string('game', 'Pong', 'help', flag_values=atari)
  flags.DEFINE_integer('num_action_repeats', 4, 'help', flag_values=atari)
  atari(['program', '--game=Breakout'])
  assert video.VideoConfig.from_flags(atari) == video.VideoConfig('Breakout', 4)
  gym = flags.FlagValues()
  flags.DEFINE_string('env_name', 'CartPole-v1', 'help', flag_values=gym)
  flags.DEFINE_integer('num_action_repeats', None, 'help', flag_values=gym)
  assert video.VideoConfig.from_flags(gym) == video.VideoConfig('CartPole-v1', 1)
  assert video.VideoConfig.from_flags(flags.FlagValues()) == video.VideoConfig(None, 1)


_FRAME_SOURCES = r'''
import sys, types
import numpy as np
from seed_rl import video
video.prepare_rendering()

def show(name, env, config):
  observation, _ = env.reset(seed=0)
  frame_fn, fps = video.frame_source(env, config)
  frame = frame_fn(observation)
  frame = frame_fn(env.step(env.action_space.sample())[0])
  print(name, frame.shape, frame.dtype, fps, int(frame.std() > 1))
  env.close()

from seed_rl.environments.atari import env as atari_env
from seed_rl.environments.atari import env_config as atari_config
config = atari_config.AtariConfig(game='Breakout', sticky_actions=False, max_random_noops=30,
                                  num_action_repeats=4)
show('atari', atari_env.create_environment(0, config), video.VideoConfig('Breakout', 4))
from tests import evaluate_helpers
from seed_rl.environments.gym import env_config as gym_config
config = gym_config.GymConfig(env_name='InvertedPendulum-v5', render_mode='rgb_array')
show('mujoco', evaluate_helpers.create_two_action_mujoco_env(0, config),
     video.VideoConfig('InvertedPendulum-v5'))
sys.path.insert(0, 'tests/environments/dmlab/fake')
from seed_rl.environments.dmlab import env as dmlab_env
from seed_rl.environments.dmlab import env_config as dmlab_config
config = dmlab_config.DmLabConfig(game='explore_goal_locations_small', num_action_repeats=4,
                                  width=96, height=72)
show('dmlab', dmlab_env.create_environment(0, config),
     video.VideoConfig('explore_goal_locations_small', 4))
try:
  from seed_rl.environments.football import env as football_env
  config = types.SimpleNamespace(game='academy_empty_goal_close', reward_experiment='scoring',
                                 smm_size='default', num_action_repeats=1)
  show('football', football_env.create_environment(0, config),
       video.VideoConfig('academy_empty_goal_close', 1))
except ImportError as e:
  print('football not installed', e)
'''


@pytest.mark.timeout(120)
def test_frame_sources_of_each_environment_family():
  result = subprocess.run([sys.executable, '-c', _FRAME_SOURCES], cwd=ROOT, env=_environment(),
                          capture_output=True, text=True, timeout=100, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  # ALE's RGB screen at 60 / num_action_repeats frames per second.
  assert 'atari (210, 160, 3) uint8 15.0 1' in lines
  # MuJoCo through EGL by default without a display (Mesa's software renderer here).
  assert 'mujoco (480, 480, 3) uint8 25.0 1' in lines
  # DeepMind Lab's RGB observation (the fake engine of the tests).
  assert 'dmlab (72, 96, 3) uint8 15.0 1' in lines
  if not any(line.startswith('football not installed') for line in lines):
    assert 'football (72, 96, 3) uint8 10.0 1' in lines


# The environment of a learner whose entry point defines its flags in `define_flags(argv)`.

ATARI_ENV_FN = 'seed_rl.environments.atari.env:create_environment'
DMLAB_ENV_FN = 'seed_rl.environments.dmlab.env:create_environment'


@pytest.mark.timeout(120)
@pytest.mark.parametrize('agent', ['vtrace', 'ppo'])
def test_an_entry_point_whose_flags_depend_on_its_agent_recreates_the_learners_environment(
    agent):
  """`bench/pixel_bandit.py`'s learner defines the flags of the package's Atari entry point its
  `--atari_main` names in its main: the environment process calls its `define_flags` with the
  learner's flags, for either agent's entry point. `bench/learn_atari.py`'s learners are those
  entry points themselves."""
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  atari_main = f'seed_rl.environments.atari.{agent}_main'
  run = evaluation_env.RunInfo(atari_main, ATARI_ENV_FN, learner_flags=[
      '--game=Breakout', '--stack_size=4', '--initialization=glorot'])
  assert evaluate_helpers.environment_name(run) == 'BreakoutNoFrameskip-v4'
  bandit = evaluation_env.RunInfo('bench.pixel_bandit', 'bench.pixel_bandit:create_environment',
                                  learner_flags=[f'--atari_main={atari_main}', '--answer_delay=2',
                                                 '--initialization=glorot'])
  assert evaluate_helpers.environment_name(bandit) == 'PixelBandit-v0'


@pytest.mark.timeout(120)
def test_an_entry_point_without_the_environments_flags_is_named_in_one_line():
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  run = evaluation_env.RunInfo(VTRACE_MAIN, DMLAB_ENV_FN, learner_flags=['--game=Pong'])
  with pytest.raises(evaluation_env.EvaluateError) as error:
    evaluate_helpers.environment_name(run)
  assert str(error.value) == (
      f'{DMLAB_ENV_FN} reads the flag --game, which {VTRACE_MAIN} does not define: pass '
      '--entry_point=MODULE, an entry point that defines the environment\'s flags (e.g. '
      'seed_rl.environments.atari.vtrace_main for Atari).')


@pytest.mark.timeout(120)
def test_flags_the_factorys_module_defines_are_read_from_the_learners_flags():
  """The Atari env module defines --game on import (as the original's): the learner's line
  sets it even when the entry point does not define it."""
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  run = evaluation_env.RunInfo(VTRACE_MAIN, ATARI_ENV_FN, learner_flags=['--game=Breakout'])
  assert evaluate_helpers.environment_name(run) == 'BreakoutNoFrameskip-v4'


# Learners whose environment factory is in their own main module (README's "Bring your own
# environment"), run as `python -m MODULE` or by path; and older records that name `__main__`.

PROJECT_MODULE = evaluate_helpers.PROJECT_MODULE
PROJECT_ENV = evaluate_helpers.PROJECT_ENV
MAIN_FACTORY = '__main__:create_environment'
NAME_THE_ENTRY_POINT = '--entry_point=MODULE --create_env_fn=MODULE:create_environment'


@pytest.fixture(scope='module')
def project(tmp_path_factory):
  """The learner file of `evaluate_helpers.write_project` in a directory of its own, which is
  not on the tests' `sys.path`."""
  return evaluate_helpers.write_project(tmp_path_factory.mktemp('project'))


def _start_from(directory, name, arguments, log_dir):
  """`python ARGUMENTS` as a `Process` whose working directory is `directory`."""
  command = shlex.join([sys.executable] + list(arguments))
  return Process(name, ['sh', '-c', f'cd {shlex.quote(str(directory))} && exec {command}'],
                 log_dir)


def _wait_for_run_record(logdir, learner, timeout=120):
  """The learner's `runs.jsonl` entry, once written (the learner writes it first thing)."""
  path = logdir / 'runs.jsonl'
  deadline = time.time() + timeout
  while not (path.exists() and path.read_text().endswith('\n')):
    assert learner.popen.poll() is None, learner.log()[-3000:]
    assert time.time() < deadline, learner.log()[-3000:]
    time.sleep(0.2)
  return json.loads(path.read_text().splitlines()[-1])


@pytest.fixture(scope='module')
def project_runs(vtrace_run, project, tmp_path_factory):
  """Logdirs of the project's learner started from the project's directory as `python -m
  byo_project.learner_main` ('module') and as `python byo_project/learner_main.py` ('script'),
  with their run records: each learner stops once it has written its record, and the trained
  CartPole policy of `vtrace_run` becomes its export."""
  tmp_path = tmp_path_factory.mktemp('project_runs')
  root = project.parents[1]
  commands = {'module': ['-m', PROJECT_MODULE], 'script': [str(project.relative_to(root))]}
  logdirs = {name: tmp_path / name for name in commands}
  learners, records = {}, {}
  try:
    for name, command in commands.items():
      flags = _flags(tmp_path, server_address=f'unix:{tmp_path}/{name}.sock',
                     logdir=logdirs[name])
      learners[name] = _start_from(root, f'{name}_learner', command + flags +
                                   ['--run_mode=learner'], tmp_path)
    for name, learner in learners.items():
      records[name] = _wait_for_run_record(logdirs[name], learner)
  finally:
    for learner in learners.values():
      learner.kill()
  for logdir in logdirs.values():
    shutil.copytree(pathlib.Path(vtrace_run['logdir']) / 'saved_model', logdir / 'saved_model')
  return {'logdirs': logdirs, 'records': records}


# Calls `evaluate` at the top level, without `if __name__ == '__main__':`.
_SCRIPT_WITHOUT_MAIN_GUARD = """import json, sys
from seed_rl.evaluate import evaluate
print('the script runs', flush=True)
result = evaluate(sys.argv[1], episodes=2, greedy=True, seed=0)
print(json.dumps([result['env'], result['lengths']]), flush=True)
"""


@pytest.fixture(scope='module')
def project_evaluations(project_runs, tmp_path_factory):
  """Two evaluations at once (each loads TensorFlow), from this repository's directory, where
  the project does not import by name: the CLI on the 'module' run, and a script without a
  `__main__` guard that calls `evaluate` on the 'script' run."""
  script = tmp_path_factory.mktemp('scripts') / 'evaluate_the_project.py'
  script.write_text(_SCRIPT_WITHOUT_MAIN_GUARD)
  logdirs = project_runs['logdirs']
  processes = {'cli': _evaluate_cli(f'--logdir={logdirs["module"]}', '--episodes=2', '--greedy',
                                    '--seed=0'),
               'script': _start([str(script), str(logdirs['script'])])}
  yield processes
  for process in processes.values():
    if process.poll() is None:
      process.kill()


def _assert_project_episodes(lengths):
  """Episodes of the project's environment: at most its time limit, so not plain CartPole."""
  assert len(lengths) == 2, lengths
  assert all(1 <= length <= evaluate_helpers.PROJECT_EPISODE_STEPS for length in lengths), lengths


@pytest.mark.timeout(300)
def test_a_learner_run_as_a_module_with_its_factory_in_main_evaluates_without_flags(
    project, project_runs, project_evaluations):
  record = project_runs['records']['module']
  assert (record['entry_point'], record['create_env_fn']) == (
      PROJECT_MODULE, f'{PROJECT_MODULE}:create_environment')
  assert os.path.samefile(record['entry_point_file'], project)
  returncode, stdout, stderr = _finish(project_evaluations['cli'])
  assert returncode == 0, stderr[-3000:]
  assert f'the VTRACE policy of {PROJECT_MODULE} on {PROJECT_ENV}' in stdout
  _assert_project_episodes([length for _, length in _episode_lines(stdout)])


@pytest.mark.timeout(300)
def test_a_learner_run_by_path_evaluates_from_a_script_without_a_main_guard(
    project, project_runs, project_evaluations):
  record = project_runs['records']['script']
  assert (record['entry_point'], record['create_env_fn']) == (None, MAIN_FACTORY)
  assert os.path.samefile(record['entry_point_file'], project)
  returncode, stdout, stderr = _finish(project_evaluations['script'])
  assert returncode == 0, stderr[-3000:]
  lines = stdout.splitlines()
  assert lines.count('the script runs') == 1, stdout  # The environment process does not rerun it.
  env_name, lengths = json.loads(lines[-1])
  assert env_name == PROJECT_ENV
  _assert_project_episodes(lengths)


@pytest.mark.timeout(120)
def test_older_records_that_name_main_find_the_entry_point(project, tmp_path):
  """Learners used to record a factory defined in their entry point as `__main__:NAME`, and
  no entry point for a script run by path; `argv[0]` (the file) leads to it in both cases."""
  from seed_rl import evaluate  # pylint: disable=g-import-not-at-top
  runs = {'module': {'entry_point': PROJECT_MODULE, 'argv': [str(project), '--run_mode=learner']},
          'script': {'entry_point': None, 'argv': [str(project), '--run_mode=learner']}}
  for name, record in runs.items():
    logdir = _fake_logdir(tmp_path / name, record=dict(record, create_env_fn=MAIN_FACTORY))
    run = evaluate.read_run_info(str(logdir))
    assert evaluate_helpers.environment_name(run) == PROJECT_ENV, name


@pytest.mark.timeout(120)
def test_older_records_that_name_main_without_a_usable_entry_point_name_the_flags(tmp_path):
  runs = {'script': {'entry_point': None, 'argv': ['gone/learner_main.py']},
          'module': {'entry_point': 'gone_project.learner_main',
                     'argv': ['/nowhere/gone_project/learner_main.py']},
          'neither': {'entry_point': None, 'argv': ['-c']}}
  processes = {name: _evaluate_cli('--logdir=' + str(_fake_logdir(
      tmp_path / name, record=dict(record, create_env_fn=MAIN_FACTORY))))
               for name, record in runs.items()}
  _expect_error(processes['script'],
                f'The learner ran the script {ROOT / "gone/learner_main.py"}, which is not here: '
                f'pass {NAME_THE_ENTRY_POINT}', f'(recorded: entry point None, file '
                f'{ROOT / "gone/learner_main.py"}, environment factory {MAIN_FACTORY})')
  _expect_error(processes['module'],
                "Cannot import the entry point gone_project.learner_main: No module named "
                "'gone_project'; run from the directory that holds it, or pass "
                f'{NAME_THE_ENTRY_POINT}', '(recorded: entry point gone_project.learner_main, '
                f'file /nowhere/gone_project/learner_main.py, environment factory {MAIN_FACTORY})')
  _expect_error(processes['neither'], "does not name the learner's entry point: pass "
                f'{NAME_THE_ENTRY_POINT}', f'(recorded: entry point None, environment factory '
                f'{MAIN_FACTORY})')


@pytest.mark.timeout(120)
def test_an_error_whose_class_the_caller_cannot_import_arrives_as_a_runtime_error(project):
  """The project's factory raises an exception of a class its script defines: the child sends
  it pickled, and where this process cannot unpickle it (the script's module does not import
  here), its text arrives as a RuntimeError, with the child's traceback as a note."""
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  run = evaluation_env.RunInfo(None, '__main__:create_broken_environment',
                               entry_point_file=str(project))
  with pytest.raises(RuntimeError) as raised:
    evaluate_helpers.environment_name(run)
  error = raised.value
  assert type(error) is RuntimeError  # pylint: disable=unidiomatic-typecheck
  assert str(error) == f'{evaluate_helpers.PROJECT_ERROR}: {evaluate_helpers.PROJECT_ERROR_TEXT}'
  (note,) = error.__notes__
  assert note.startswith('In the environment process:\n')
  assert f'raise {evaluate_helpers.PROJECT_ERROR}(' in note


@pytest.mark.timeout(60)
def test_an_environment_process_that_ends_at_start_is_waited_for_and_named(monkeypatch):
  """The child ends before the parent sends it the run: a clear error, and no process left
  unwaited."""
  from seed_rl import evaluation_env  # pylint: disable=g-import-not-at-top
  started = []
  popen = subprocess.Popen

  def popen_that_waits_for_the_end(*args, **kwargs):
    process = popen(*args, **kwargs)
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # Ended, left to be waited on.
    started.append(process)
    return process

  monkeypatch.setattr(evaluation_env, '_CHILD_PROGRAM', 'import sys; sys.exit(3)')
  monkeypatch.setattr(evaluation_env.subprocess, 'Popen', popen_that_waits_for_the_end)
  run = evaluation_env.RunInfo(VTRACE_MAIN, 'seed_rl.environments.gym.env:create_environment')
  with pytest.raises(evaluation_env.EvaluateError,
                     match=r'^The environment process ended \(exit code 3\) before it received '
                           r'the run \('):
    evaluation_env.EnvironmentProcess(run)
  (process,) = started
  assert process.returncode == 3


def test_a_run_record_whose_last_line_is_not_an_object_is_a_clear_error(tmp_path):
  """`seed_rl.common.config.run_identity` reads the record, as for `seed_rl.plot`."""
  from seed_rl import evaluate  # pylint: disable=g-import-not-at-top
  logdir = _fake_logdir(tmp_path, record=['not', 'an', 'object'])
  with pytest.raises(evaluate.EvaluateError,
                     match=f'^{re.escape(str(logdir / "runs.jsonl"))}: its last line is not a '
                           r'JSON object: restore it from a copy, or move it out of the logdir '
                           r'and pass --entry_point=MODULE --create_env_fn=MODULE:FUNCTION '
                           r'instead\.$'):
    evaluate.read_run_info(str(logdir))
