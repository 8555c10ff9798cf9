"""Runs README.md's "Bring your own environment" example as it is written there.

The test takes the README's `my_project/vtrace_main.py` and its learner and actor command lines
from the README itself, writes the file into a temporary directory and runs the commands as real
processes from that directory. The only changes to the commands: the logdir goes to the test's
temporary directory, every process gets a free `--server_address` (runs on the same machine must
not collide), and the frame budget is smaller so that training ends in about a minute; the
trained run is then evaluated with `python -m seed_rl.evaluate` as README says. A second
test leaves out `--num_envs=2` and the second actor, which starves inference, and checks that the
learner says so as the README promises.
"""

import contextlib
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
from typing import Dict, Iterator, List

import pytest

from tests.processes import ROOT, Process

SECTION = '## Bring your own environment'
README_LOGDIR = '/tmp/my_env'
# V-trace trains on 32 unrolls of 100 frames (3,200 frames an iteration): 2 iterations, enough
# for a checkpoint and an export of trained weights.
TEST_FRAMES = 6400


def readme_section(heading: str) -> str:
  """The text of README.md from `heading` to the next `## ` heading."""
  text = (ROOT / 'README.md').read_text()
  start = text.index(f'\n{heading}\n')
  end = text.find('\n## ', start + 1)
  return text[start:end if end != -1 else len(text)]


def fenced_block(section: str, language: str) -> str:
  """The one ```language block of `section`."""
  blocks = re.findall(rf'^```{language}\n(.*?)^```$', section, re.MULTILINE | re.DOTALL)
  assert len(blocks) == 1, f'expected one ```{language} block in the section, got {len(blocks)}'
  return blocks[0]


def command_lines(sh_block: str) -> List[str]:
  """The commands of a shell block, one a command, with `\\` continuations joined."""
  joined = re.sub(r'\\\n\s*', ' ', sh_block)
  return [line.strip() for line in joined.splitlines() if line.strip()]


def substituted(command: str, pattern: str, replacement: str) -> str:
  """`command` with `pattern` replaced; fails when the README no longer has it."""
  new_command, count = re.subn(pattern, replacement, command)
  assert count == 1, f'{pattern!r} not in the README command {command!r}'
  return new_command


def free_port() -> int:
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


class ReadmeExample(object):
  """The example's project directory and command lines, adapted to run inside `tmp_path`."""

  def __init__(self, tmp_path: pathlib.Path):
    section = readme_section(SECTION)
    python_source = fenced_block(section, 'python')
    first_line = python_source.splitlines()[0]
    assert first_line == '# my_project/vtrace_main.py', first_line
    self.project_root = tmp_path / 'project'
    (self.project_root / 'my_project').mkdir(parents=True)
    (self.project_root / 'my_project' / 'vtrace_main.py').write_text(python_source)
    self.logdir = tmp_path / 'logdir'
    self.process_logs = tmp_path / 'logs'
    self.process_logs.mkdir()
    port = free_port()
    learner, *actors = command_lines(fenced_block(section, 'sh'))
    assert '--run_mode=learner' in learner and len(actors) == 2, (learner, actors)
    learner = substituted(learner, re.escape(README_LOGDIR), str(self.logdir))
    named = {'learner': learner, **{f'actor_{task}': actor for task, actor in enumerate(actors)}}
    self.commands = {name: f'{command} --server_address=localhost:{port}'
                     for name, command in named.items()}

  @contextlib.contextmanager
  def run(self, commands: Dict[str, str]) -> Iterator[Dict[str, Process]]:
    """Starts each command line with `sh` from the project root, each with a log file in
    `process_logs`; kills every one of them (and what it started) on exit."""
    # `python` in the commands is this interpreter (the venv's); `seed_rl` imports from ROOT.
    env = {'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''),
           'PYTHONPATH': str(ROOT)}
    cd = f'cd {shlex.quote(str(self.project_root))} && exec '
    processes: Dict[str, Process] = {}
    try:
      for name, command in commands.items():
        processes[name] = Process(name, ['sh', '-c', cd + command], self.process_logs, env)
      yield processes
    finally:
      for process in processes.values():
        process.kill()


def assert_no_traceback(process: Process) -> None:
  assert 'Traceback' not in process.log(), f'{process.name}:\n{process.log()[-4000:]}'


@pytest.mark.timeout(300)
def test_readme_example_trains_checkpoints_and_exports(tmp_path):
  example = ReadmeExample(tmp_path)
  commands = dict(example.commands)
  commands['learner'] = substituted(commands['learner'], r'--total_environment_frames=\d+',
                                    f'--total_environment_frames={TEST_FRAMES}')
  with example.run(commands) as processes:
    learner = processes.pop('learner')
    learner.wait_for(r'Training finished at iteration \d+ .*: the frame budget is spent',
                     timeout=240)
    assert learner.wait(timeout=30) == 0, learner.log()[-4000:]
    assert_no_traceback(learner)
    # The learner tells its actors that training is finished: they stop by themselves.
    for task, actor in enumerate(processes.values()):
      assert re.search(rf'Actor {task} connected to localhost:\d+; environments {task} to '
                       rf'{task}\.', actor.log()), actor.log()[-4000:]
      assert actor.wait(timeout=30) == 0, actor.log()[-4000:]
      assert 'finished training; this actor stops.' in actor.log(), actor.log()[-4000:]
      assert_no_traceback(actor)
  assert (example.logdir / 'checkpoint').is_file()
  assert list(example.logdir.glob('ckpt-*.index'))
  assert (example.logdir / 'saved_model' / 'saved_model.pb').is_file()
  # README's evaluate command finds the example's own environment again from the run's
  # record, run from another directory than the project's and without --entry_point flags.
  evaluation = subprocess.run(
      [sys.executable, '-m', 'seed_rl.evaluate', f'--logdir={example.logdir}', '--episodes=2',
       '--greedy'], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
  assert evaluation.returncode == 0, evaluation.stderr[-3000:]
  assert re.search(r'^2 episodes of MyEnv-v0 \(greedy actions\): return ', evaluation.stdout,
                   re.MULTILINE), evaluation.stdout


@pytest.mark.timeout(180)
def test_readme_example_with_default_num_envs_and_one_actor_says_that_inference_starves(
    tmp_path):
  """The README's learner without `--num_envs=2` (so 4 environments, inference batches of 2)
  against its first actor alone: the batch never fills and the learner says why."""
  example = ReadmeExample(tmp_path)
  commands = {'learner': substituted(example.commands['learner'], r' --num_envs=\d+', ''),
              'actor_0': example.commands['actor_0']}
  with example.run(commands) as processes:
    learner = processes['learner']
    processes['actor_0'].wait_for('Actor 0 connected to', timeout=60)
    # The warning comes after the batch has waited 10 s for env ids 1 to 3.
    warning, = learner.wait_for(r'Inference starved for .*', timeout=40)
    assert '--num_envs=4, env ids 1-3 did not call' in warning.group(0), warning.group(0)
    assert 'tasks 1-3 with --env_batch_size=1' in warning.group(0), warning.group(0)
    learner.signal(signal.SIGTERM)
    assert learner.wait(timeout=60) == 0, learner.log()[-4000:]
    assert 'Training finished at iteration 0' in learner.log()
    assert_no_traceback(learner)
