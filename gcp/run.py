#!/usr/bin/env python3
r"""Container entrypoint of SEED RL: runs this host's part of a multi-host experiment.

  python3 gcp/run.py --environment=ENV --agent=AGENT --actors_per_worker=N \
      --env_batch_size=B [--dry_run] -- [flags for the learner and the actors]

The role of this host comes from the cluster description that Vertex AI (or AI Platform, or you)
puts in the environment: `TF_CONFIG`, else `CLUSTER_SPEC`, both JSON of the form

  {"cluster": {"workerpool0": ["learner-host:2222"],
               "workerpool1": ["actor-host-0:2222", "actor-host-1:2222"]},
   "task": {"type": "workerpool1", "index": 1}}

- task type `chief`, `master` or `workerpool0`: this host runs the learner, listening on
  `[::]:PORT` where PORT is the port of the learner's entry in the cluster;
- task type `worker` or `workerpool1` with index i: this host runs `--actors_per_worker` actors
  with `--task=i * actors_per_worker + a` (a = 0 .. actors_per_worker - 1) that connect to the
  learner's entry (`--server_address=learner-host:PORT`);
- every process gets `--num_envs=workers * actors_per_worker * env_batch_size` (the original
  forgot `env_batch_size`) and `--env_batch_size`, where `workers` is the number of actor hosts in
  the cluster (or `--workers`), and every argument after the first `--`.

Without a cluster description (or with a task type SEED RL has no role for, such as `ps` or
`evaluator`) run.py exits with status 2 and says what it expected; on your own machines write
the TF_CONFIG yourself (see docs/deployment.md, "Your own machines").

The processes run `python -m seed_rl.environments.ENV.AGENT_main` (or `--main_module`) with
this interpreter, in run.py's working directory, with the checkout first on PYTHONPATH. run.py
waits for all of them: the first one that exits with a non-zero status (or is killed) makes
run.py stop the others and exit with that status (128 + n for signal n), so that the container
fails with it. SIGTERM and SIGINT are forwarded to every child (the learner checkpoints before
it exits; run.py then exits with 0 if every child did, else 128 + the signal); a second signal
kills the children. `--dry_run` prints the commands, one per line,
instead of starting them.

This file only launches processes: it imports neither TensorFlow nor seed_rl.
"""

import dataclasses
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from absl import app
from absl import flags
from absl import logging

FLAGS = flags.FLAGS

flags.DEFINE_string('environment', 'football',
                    'Environment package under seed_rl.environments: atari, football, dmlab, '
                    'gym, mujoco.')
flags.DEFINE_string('agent', 'vtrace',
                    'Agent: vtrace, r2d2, sac or ppo, where the environment has it (its '
                    '<agent>_main module runs).')
flags.DEFINE_integer('actors_per_worker', 1, 'Actor processes on each actor host.')
flags.DEFINE_integer('env_batch_size', 1, 'Environments per actor process.')
flags.DEFINE_integer('workers', None,
                     'Number of actor hosts. Default: the number of hosts in the cluster\'s '
                     'actor pool (worker / workerpool1); needed only when the cluster does not '
                     'list them.')
flags.DEFINE_string('main_module', None,
                    'Python module to run instead of seed_rl.environments.ENV.AGENT_main, e.g. '
                    'an entry point of your own environment. It gets the same flags.')
flags.DEFINE_bool('dry_run', False,
                  'Print the commands this host would run, one per line, and exit.')
flags.DEFINE_float('stop_grace_secs', 60,
                   'After forwarding a stop signal (or after a child failed), seconds to wait '
                   'for the children before killing them.')

#: Task types whose host runs the learner (AI Platform: master; TensorFlow: chief; Vertex AI's
#: first worker pool: workerpool0) and those whose host runs actors.
LEARNER_TASK_TYPES = ('chief', 'master', 'workerpool0')
ACTOR_TASK_TYPES = ('worker', 'workerpool1')
#: Flags run.py computes; forwarding them after `--` would contradict it.
RESERVED_FLAGS = ('run_mode', 'task', 'num_envs', 'env_batch_size', 'server_address')
#: The cluster description variables, in the order they are consulted.
CLUSTER_VARIABLES = ('TF_CONFIG', 'CLUSTER_SPEC')
#: The checkout (or image directory) that holds gcp/ and seed_rl/.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_EXAMPLE = ('{"cluster": {"chief": ["10.0.0.1:8686"], "worker": ["10.0.0.2:8686"]}, '
            '"task": {"type": "worker", "index": 0}}')


class ConfigError(ValueError):
  """A flag contradicts another or the cluster: run.py says why and exits with status 2."""


class ClusterError(ConfigError):
  """The cluster description is missing, malformed or names a role SEED RL does not have."""


@dataclasses.dataclass(frozen=True)
class Cluster:
  """What this host needs to know about the experiment's cluster."""
  source: str  # The environment variable it came from.
  task_type: str
  task_index: int
  learner_host: str  # As written in the cluster, e.g. 'cmle-training-workerpool0-ab-0'.
  learner_port: int
  num_workers: Optional[int]  # Hosts in the actor pool; None when the cluster lists none.

  @property
  def is_learner(self) -> bool:
    return self.task_type in LEARNER_TASK_TYPES


@dataclasses.dataclass(frozen=True)
class Command:
  """One process to start: a name for the logs and its argv."""
  name: str
  argv: List[str]


def _split_host_port(address: str) -> Tuple[str, int]:
  """'host:port' or '[v6]:port' -> (host, port)."""
  host, sep, port = str(address).rpartition(':')
  if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ClusterError(f'Learner address {address!r} in the cluster is not host:port.')
  return host, int(port)


def _first_pool(cluster: Mapping[str, Sequence[str]],
                names: Sequence[str]) -> Tuple[Optional[str], Optional[Sequence[str]]]:
  for name in names:
    if name in cluster:
      return name, cluster[name]
  return None, None


def parse_cluster(environ: Mapping[str, str]) -> Cluster:
  """The role of this host from TF_CONFIG (when it has a task) or CLUSTER_SPEC.

  Raises:
    ClusterError: with a message that says what is wrong and what is expected.
  """
  source, spec = None, None
  for name in CLUSTER_VARIABLES:
    text = environ.get(name, '').strip()
    if not text:
      continue
    try:
      parsed = json.loads(text)
    except json.JSONDecodeError as e:
      raise ClusterError(f'{name} is not valid JSON ({e}): {text[:200]!r}') from None
    if not isinstance(parsed, dict):
      raise ClusterError(f'{name} must be a JSON object, got {text[:200]!r}.')
    if parsed.get('task'):
      source, spec = name, parsed
      break
  if spec is None:
    raise ClusterError(
        'No cluster description: neither TF_CONFIG nor CLUSTER_SPEC is set with a "task". '
        'Vertex AI and AI Platform set them; on your own machines set TF_CONFIG, e.g. '
        f"TF_CONFIG='{_EXAMPLE}'.")

  task = spec['task']
  cluster = spec.get('cluster')
  if not isinstance(task, dict) or not isinstance(cluster, dict):
    raise ClusterError(f'{source} needs a "cluster" object and a "task" object with "type" and '
                       f'"index", e.g. {_EXAMPLE}.')
  task_type = task.get('type')
  try:
    task_index = int(task.get('index', 0))
  except (TypeError, ValueError):
    raise ClusterError(f'{source}: task index {task.get("index")!r} is not an integer.') from None
  if task_type not in LEARNER_TASK_TYPES + ACTOR_TASK_TYPES:
    raise ClusterError(
        f'Unexpected task type {task_type!r} in {source}: SEED RL runs the learner on '
        f'{"/".join(LEARNER_TASK_TYPES)} and actors on {"/".join(ACTOR_TASK_TYPES)} '
        '(Vertex AI: the first worker pool is the learner, the second the actors; '
        'no parameter servers or evaluators).')

  learner_pool, learner_hosts = _first_pool(cluster, LEARNER_TASK_TYPES)
  if not learner_hosts:
    raise ClusterError(f'The cluster in {source} lists no learner host (one of '
                       f'{", ".join(LEARNER_TASK_TYPES)}): {json.dumps(cluster)[:300]}')
  if len(learner_hosts) != 1:
    raise ClusterError(f'The learner pool {learner_pool!r} in {source} must have exactly one '
                       f'host (SEED RL has one learner), got {len(learner_hosts)}.')
  learner_host, learner_port = _split_host_port(learner_hosts[0])

  actor_pool, actor_hosts = _first_pool(cluster, ACTOR_TASK_TYPES)
  num_workers = None if actor_hosts is None else len(actor_hosts)
  if task_type in LEARNER_TASK_TYPES and task_index != 0:
    raise ClusterError(f'Task {task_type} index {task_index} in {source}: there is only one '
                       'learner (index 0).')
  if task_type in ACTOR_TASK_TYPES:
    if num_workers is None:
      raise ClusterError(f'This host is task {task_type} but the cluster in {source} lists no '
                         f'actor hosts ({"/".join(ACTOR_TASK_TYPES)}).')
    if not 0 <= task_index < num_workers:
      raise ClusterError(f'Task {task_type} index {task_index} in {source} is out of range: '
                         f'the pool {actor_pool!r} has {num_workers} host(s).')
  return Cluster(source, task_type, task_index, learner_host, learner_port, num_workers)


def split_argv(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
  """Splits at the first '--': (run.py's own arguments, those forwarded to every process)."""
  argv = list(argv)
  if '--' in argv:
    i = argv.index('--')
    return argv[:i], argv[i + 1:]
  return argv, []


def check_forwarded(forwarded: Sequence[str]) -> None:
  """Refuses forwarded flags that run.py sets itself (they would contradict its values)."""
  pattern = re.compile(r'^--?(%s)(?:=|$)' % '|'.join(RESERVED_FLAGS))
  for argument in forwarded:
    if pattern.match(argument):
      raise ConfigError(
          f'{argument} after "--" is set by run.py (from the cluster, --actors_per_worker and '
          f'--env_batch_size); remove it.')


def build_commands(cluster: Cluster, module: str, actors_per_worker: int, env_batch_size: int,
                   workers: Optional[int], forwarded: Sequence[str],
                   python: str = sys.executable) -> List[Command]:
  """The processes of this host: the learner, or `actors_per_worker` actors."""
  if actors_per_worker < 1:
    raise ConfigError(f'--actors_per_worker must be at least 1, got {actors_per_worker}.')
  if env_batch_size < 1:
    raise ConfigError(f'--env_batch_size must be at least 1, got {env_batch_size}.')
  num_workers = cluster.num_workers
  if workers is not None:
    if workers < 1:
      raise ConfigError(f'--workers must be at least 1, got {workers}.')
    if num_workers is not None and workers != num_workers:
      raise ConfigError(f'--workers={workers} but the cluster in {cluster.source} lists '
                           f'{num_workers} actor host(s).')
    num_workers = workers
  if num_workers is None:
    raise ConfigError(f'The cluster in {cluster.source} lists no actor hosts (worker / '
                         'workerpool1); pass --workers=N so that the learner knows how many '
                         'environments to expect.')
  num_envs = num_workers * actors_per_worker * env_batch_size
  base = [python, '-m', module]
  shared = [f'--num_envs={num_envs}', f'--env_batch_size={env_batch_size}'] + list(forwarded)
  if cluster.is_learner:
    return [Command('learner', base + ['--run_mode=learner',
                                       f'--server_address=[::]:{cluster.learner_port}'] + shared)]
  address = f'{cluster.learner_host}:{cluster.learner_port}'
  commands = []
  for actor in range(actors_per_worker):
    task = cluster.task_index * actors_per_worker + actor
    commands.append(Command(f'actor_{task}', base + [
        '--run_mode=actor', f'--task={task}', f'--server_address={address}'] + shared))
  return commands


def main_module(environment: str, agent: str, override: Optional[str]) -> str:
  """The entry point module to run, checked against the checkout when there is one."""
  if override:
    return override
  if not re.fullmatch(r'[a-z0-9_]+', environment) or not re.fullmatch(r'[a-z0-9_]+', agent):
    raise ConfigError(f'Bad --environment={environment!r} or --agent={agent!r}.')
  environments_dir = os.path.join(ROOT, 'seed_rl', 'environments')
  if os.path.isdir(environments_dir):
    path = os.path.join(environments_dir, environment, f'{agent}_main.py')
    if not os.path.isfile(path):
      available = sorted(
          f'{env} {name[:-len("_main.py")]}' for env in os.listdir(environments_dir)
          if os.path.isdir(os.path.join(environments_dir, env))
          for name in os.listdir(os.path.join(environments_dir, env))
          if name.endswith('_main.py'))
      raise ConfigError(f'No entry point for --environment={environment} --agent={agent} '
                           f'({path} does not exist); available: {", ".join(available)}.')
  return f'seed_rl.environments.{environment}.{agent}_main'


def child_environment(environ: Mapping[str, str]) -> Dict[str, str]:
  """The children's environment: ours, with the checkout first on PYTHONPATH."""
  environment = dict(environ)
  environment.setdefault('PYTHONUNBUFFERED', '1')
  if os.path.isdir(os.path.join(ROOT, 'seed_rl')):
    paths = [ROOT] + [p for p in environment.get('PYTHONPATH', '').split(os.pathsep) if p]
    environment['PYTHONPATH'] = os.pathsep.join(paths)
  return environment


def _describe(returncode: int) -> str:
  if returncode < 0:
    try:
      return f'was killed by signal {signal.Signals(-returncode).name}'
    except ValueError:
      return f'was killed by signal {-returncode}'
  return f'exited with status {returncode}'


def _exit_status(returncode: int) -> int:
  """A child's status as a shell reports it (killed by signal n: 128 + n)."""
  return 128 - returncode if returncode < 0 else returncode


class Supervisor(object):
  """Starts the children, forwards stop signals to them and turns their fate into ours."""

  def __init__(self, commands: Sequence[Command], env: Mapping[str, str], cwd: str,
               stop_grace_secs: float):
    self._commands = list(commands)
    self._env = dict(env)
    self._cwd = cwd
    self._grace = stop_grace_secs
    self._children: Dict[str, subprocess.Popen] = {}  # By name, in start order.
    self._signals: List[int] = []  # Received, in order.
    self._signals_handled = 0
    self._kill_deadline: Optional[float] = None

  def _signal_children(self, signum: int) -> None:
    for process in self._children.values():
      if process.poll() is None:
        try:
          process.send_signal(signum)
        except ProcessLookupError:
          pass

  def _on_signal(self, signum: int, unused_frame) -> None:
    self._signals.append(signum)  # Acted on by `_act_on_signals`, outside the handler.

  def _act_on_signals(self) -> None:
    """Forwards the first stop signal to every child; a later one kills them."""
    while self._signals_handled < len(self._signals):
      signum = self._signals[self._signals_handled]
      self._signals_handled += 1
      if self._signals_handled == 1:
        logging.info('run.py: %s received; forwarding it to every child.',
                     signal.Signals(signum).name)
        self._signal_children(signum)
        self._kill_deadline = time.time() + self._grace
      else:
        logging.info('run.py: %s received again; killing every child.',
                     signal.Signals(signum).name)
        self._signal_children(signal.SIGKILL)

  def _stop_others(self, signum: int) -> None:
    if self._kill_deadline is None:
      self._kill_deadline = time.time() + self._grace
    self._signal_children(signum)

  def run(self) -> int:
    """Runs every command to its end; returns the exit status run.py should have."""
    previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    failure: Optional[Tuple[str, int]] = None
    try:
      for command in self._commands:
        self._act_on_signals()
        if self._signals:
          break
        process = subprocess.Popen(command.argv, cwd=self._cwd, env=self._env)
        self._children[command.name] = process
        logging.info('run.py: started %s (pid %d): %s', command.name, process.pid,
                     shlex.join(command.argv))
      reported = set()
      while True:
        self._act_on_signals()
        running = 0
        for name, process in self._children.items():
          returncode = process.poll()
          if returncode is None:
            running += 1
            continue
          if name in reported:
            continue
          reported.add(name)
          logging.info('run.py: %s (pid %d) %s.', name, process.pid, _describe(returncode))
          if returncode != 0 and failure is None and not self._signals:
            failure = (name, returncode)
            logging.error('run.py: %s failed; stopping the other processes.', name)
            self._stop_others(signal.SIGTERM)
        if not running:
          break
        if self._kill_deadline is not None and time.time() > self._kill_deadline:
          logging.warning('run.py: children still running %.0f s after the stop request; '
                          'killing them.', self._grace)
          self._signal_children(signal.SIGKILL)
          self._kill_deadline = float('inf')
        time.sleep(0.1)
    finally:
      for signum, handler in previous.items():
        signal.signal(signum, handler)
      # Leaves no child behind when run.py itself fails (a no-op after a normal end).
      self._signal_children(signal.SIGKILL)
    if failure is not None:
      return _exit_status(failure[1]) or 1
    if self._signals and any(p.returncode != 0 for p in self._children.values()):
      return 128 + self._signals[0]
    return 0


def main(argv: Sequence[str], forwarded: Sequence[str] = ()) -> int:
  """Works out this host's commands and prints (--dry_run) or runs them; returns the status."""
  try:
    if len(argv) > 1:
      raise ConfigError(f'Unexpected arguments before "--": {list(argv[1:])}; flags for the '
                        'learner and the actors go after "--".')
    check_forwarded(forwarded)
    module = main_module(FLAGS.environment, FLAGS.agent, FLAGS.main_module)
    cluster = parse_cluster(os.environ)
    commands = build_commands(cluster, module, FLAGS.actors_per_worker, FLAGS.env_batch_size,
                              FLAGS.workers, forwarded)
  except ConfigError as e:
    print(f'run.py: error: {e}', file=sys.stderr)
    return 2
  if FLAGS.dry_run:
    for command in commands:
      print(shlex.join(command.argv))
    sys.stdout.flush()
    return 0
  role = 'the learner' if cluster.is_learner else f'{len(commands)} actor(s)'
  logging.info('run.py: task %s %d (from %s) runs %s; learner at %s:%d.', cluster.task_type,
               cluster.task_index, cluster.source, role, cluster.learner_host,
               cluster.learner_port)
  # The children run where run.py was started, so relative paths in the flags mean the same.
  supervisor = Supervisor(commands, child_environment(os.environ), os.getcwd(),
                          FLAGS.stop_grace_secs)
  return supervisor.run()


def run() -> None:
  """Parses run.py's flags (before '--') with absl and forwards the rest."""
  own, forwarded = split_argv(sys.argv)
  app.run(lambda argv: main(argv, forwarded), argv=own)


if __name__ == '__main__':
  run()
