"""The actor loop: steps environments and asks the learner for every action (no TensorFlow).

An actor owns environments `[task * b, (task + 1) * b)` (b = env_batch_size). Each step it sends
`(env_ids, run_ids, EnvOutput, raw_rewards)` for all of them in one call and applies the
returned actions (with `--double_buffered_acting`, in two calls of half of them, one half
stepping while the other's call is in flight).

When the learner finishes training it says so (`grpc.TrainingFinishedError`), and the actor says
so in one line and stops. When the learner goes away (preemption, stop request, restart) the
actor closes its environments, reconnects, waiting as long as it takes, and starts again with new
run ids, which tells the learner to reset those environments' state.

When the learner refuses a call in a way that the same call can pass later
(`seed_rl.grpc.call_refusals`: its env ids are owned by a live actor on another connection,
or the server holds its limit of bytes in flight), the actor sends the same call again after a
pause that grows up to `REFUSAL_RETRY_SECS[1]`, keeping its run ids: an actor started while
another with the same --task runs takes over once that one is gone. Any other refusal ends the
actor with the learner's message.
"""

from concurrent import futures
import socket
import threading
import time
from typing import Any, Callable, Optional

from absl import flags
from absl import logging
import numpy as np

from seed_rl import grpc
from seed_rl.grpc import address_list
from seed_rl.grpc import call_refusals
from seed_rl.common import env_wrappers
from seed_rl.common.config import checks
from seed_rl.common.config import transfer
from seed_rl.common.structures import EnvOutput
from seed_rl.grpc import errors
from seed_rl.grpc import security
from seed_rl.shm import address as shm_address

FLAGS = flags.FLAGS


class FatalActorError(RuntimeError):
  """An error that reconnecting or retrying cannot fix: the learner refused this actor's calls
  for a reason of the actor's own, or sent an action the environment cannot take. The actor
  stops with this message."""


class _EpisodeStats(object):
  """Returns and lengths of the episodes finished since the last report."""

  def __init__(self):
    self.returns, self.raw_returns, self.steps = [], [], []

  def add(self, episode_return: float, raw_return: float, steps: int) -> None:
    self.returns.append(episode_return)
    self.raw_returns.append(raw_return)
    self.steps.append(steps)


class _Timer(object):
  """Mean duration of a repeated operation over a reporting period."""

  def __init__(self):
    self.total, self.count = 0.0, 0

  def add(self, seconds: float) -> None:
    self.total += seconds
    self.count += 1

  def mean_ms(self) -> float:
    return 1000 * self.total / max(1, self.count)


def _new_run_ids(batch_size: int) -> np.ndarray:
  """Random run ids; a fresh, unseeded generator so restarts never reuse an id."""
  return np.random.default_rng().integers(0, np.iinfo(np.int64).max, size=batch_size,
                                          dtype=np.int64)


# Seconds between the lines an actor logs while no learner answers at its address.
CONNECT_LOG_PERIOD = 60.
# Seconds an actor waits before it sends a refused call again: at first, and at most (the pause
# doubles from one to the other).
REFUSAL_RETRY_SECS = (0.5, 8.)
# Seconds between the lines an actor logs while the learner keeps refusing its calls.
REFUSAL_LOG_PERIOD = 60.


def check_server_address(address: str) -> None:
  """Raises FatalActorError for an address that cannot be parsed or whose host cannot be
  resolved: waiting for a learner there would be waiting forever."""
  if address.startswith('unix:'):
    if len(address) == len('unix:'):
      raise FatalActorError(f'--server_address={address!r} names no socket path.')
    return
  if address.startswith(shm_address.PREFIX):
    try:
      shm_address.check_name(address)
    except shm_address.AddressError as e:
      raise FatalActorError(f'--server_address: {e}') from None
    return
  host, separator, port = address.rpartition(':')
  if not (separator and host and port.isdigit() and 0 < int(port) < 65536):
    raise FatalActorError(f'--server_address={address!r} is not host:port, [host]:port, '
                          'unix:/path or shm:NAME.')
  try:
    socket.getaddrinfo(host.strip('[]'), int(port))
  except socket.gaierror as e:
    raise FatalActorError(f'--server_address={address}: cannot resolve the host {host!r} '
                          f'({e.strerror}).') from e


def actor_address(server_address: str) -> str:
  """The address an actor connects to: `server_address` itself, or for a learner's list of
  addresses (`localhost:8686,shm:run1`) its first `shm:` address, else its first
  (`address_list.for_actor`); raises FatalActorError for a list or an address that cannot be
  used (`check_server_address`)."""
  try:
    address = address_list.for_actor(server_address)
  except address_list.AddressListError as e:
    raise FatalActorError(str(e)) from None
  check_server_address(address)
  return address


def _connect(config) -> 'grpc.Client':
  """A client of the learner at `actor_address(config.server_address)`, waiting for it as long
  as it takes, with a line now and then."""
  address = actor_address(config.server_address)
  unavailable = errors.error_classes(errors.UNAVAILABLE)
  waited = 0.
  while True:
    try:
      return grpc.Client(address, timeout=CONNECT_LOG_PERIOD, **security.SecurityFiles(
          token_file=config.grpc_token_file, tls_ca_file=config.grpc_tls_ca_file).client_kwargs())
    except unavailable:
      waited += CONNECT_LOG_PERIOD
      logging.warning('No learner at %s for %.0f s; is it running?', address, waited)


class _RefusalRetries(object):
  """Sends a call again, after a growing pause, while the learner refuses it in a way that a
  later try can pass (`call_refusals.is_retryable`); logs the first refusal at once and then at
  most one line per `REFUSAL_LOG_PERIOD`. Thread-safe (double-buffered acting calls from two
  threads)."""

  def __init__(self, config):
    self._config = config
    self._stopped = threading.Event()
    self._lock = threading.Lock()
    self._last_line = None  # When the last line about refusals was logged.
    self._unlogged = 0  # Refusals since then.

  def call(self, method: Callable[..., Any], *args) -> Any:
    """`method(*args)`, sent again while it is refused in a retryable way."""
    pause, refusals = REFUSAL_RETRY_SECS[0], 0
    while True:
      try:
        result = method(*args)
      except Exception as e:  # pylint: disable=broad-except
        if not call_refusals.is_retryable(e):
          raise
        refusals += 1
        self._log(e)
        self._stopped.wait(pause)  # Once stopped, the client is closed: the next try says so.
        pause = min(2 * pause, REFUSAL_RETRY_SECS[1])
        continue
      if refusals:
        logging.info('The learner at %s accepted a call of actor %d after %d refusals.',
                     self._config.server_address, self._config.task, refusals)
      return result

  def stop(self) -> None:
    """Ends the pauses: the clients are being closed."""
    self._stopped.set()

  def _log(self, error: Exception) -> None:
    now = time.monotonic()
    with self._lock:
      self._unlogged += 1
      if self._last_line is not None and now - self._last_line < REFUSAL_LOG_PERIOD:
        return
      count, self._unlogged, self._last_line = self._unlogged, 0, now
    logging.warning('The learner at %s refused %d call(s) of actor %d for now; it sends them '
                    'again every %.0f s at most until they pass: %s', self._config.server_address,
                    count, self._config.task, REFUSAL_RETRY_SECS[1], _first_line(error))


class _EnvGroup(object):
  """Environments that travel in one inference call, and the state of their episodes."""

  def __init__(self, create_env_fn, config, first_env_id: int, size: int):
    self.env = env_wrappers.BatchedEnvironment(create_env_fn, size, first_env_id, config)
    self.env_ids = self.env.env_ids
    self.run_ids = _new_run_ids(size)
    self.observation = self.env.reset()
    self.reward = np.zeros(size, np.float32)
    self.raw_reward = np.zeros(size, np.float32)
    self.done = np.zeros(size, bool)
    self.abandoned = np.zeros(size, bool)
    self.episode_step = np.zeros(size, np.int32)
    self.episode_return = np.zeros(size, np.float64)
    self.episode_raw_return = np.zeros(size, np.float64)

  def request(self) -> tuple:
    """The arguments of the group's next inference call."""
    env_output = EnvOutput(self.reward, self.done, self.observation, self.abandoned,
                           self.episode_step)
    return self.env_ids, self.run_ids, env_output, self.raw_reward

  def step(self, action, stats: _EpisodeStats) -> None:
    """Applies the learner's actions; finished episodes go to `stats`."""
    _, self.reward, self.done, infos = self.env.step(action)
    for i, info in enumerate(infos):
      self.episode_step[i] += 1
      self.episode_return[i] += self.reward[i]
      # Football gives the raw score apart from the (possibly shaped) reward.
      self.raw_reward[i] = info.get('score_reward', self.reward[i])
      self.episode_raw_return[i] += self.raw_reward[i]
      # A time limit cuts the episode short: the learner must not take its last state's
      # value as 0, as it would at a terminal state.
      self.abandoned[i] = info.get('abandoned', False) or info.get('truncated', False)
      if self.abandoned[i] and not self.done[i]:
        raise ValueError(f'Environment {self.env_ids[i]} reported an abandoned episode that is '
                         'not done.')
      if self.done[i]:
        stats.add(self.episode_return[i], self.episode_raw_return[i], self.episode_step[i])
        self.episode_step[i] = 0
        self.episode_return[i] = self.episode_raw_return[i] = 0.
    # The next call carries done=True with the first observation of the new episode and the
    # last reward of the old one.
    self.observation = self.env.reset_if_done(self.done)


class _Acting(object):
  """One connection's worth of acting: the groups of environments and their clients.

  With `--double_buffered_acting` the actor's environments form two groups, each with its own
  client: one group steps while the other's call is in flight, so the actor's CPU does not idle
  while it waits for actions. Without it, one group, one call per step.
  """

  def __init__(self, create_env_fn, config, client: 'grpc.Client'):
    """Takes over `client`: `close` closes it."""
    self.clients, self.groups = [client], []
    self._executor = None
    self._retries = _RefusalRetries(config)
    num_groups = 2 if config.double_buffered_acting else 1
    size = config.env_batch_size // num_groups
    try:
      for g in range(num_groups):
        self.groups.append(_EnvGroup(create_env_fn, config,
                                     config.task * config.env_batch_size + g * size, size))
      if num_groups == 2:
        self.clients.append(_connect(config))
      # Each client's inference method, fetched once (a client makes it anew on every access).
      self._inference = [c.inference for c in self.clients]
      if num_groups == 2:
        self._executor = futures.ThreadPoolExecutor(2, thread_name_prefix='inference')
        self._pending = [self._send(g) for g in range(2)]
    except BaseException:
      self.close()
      raise

  def _call(self, g: int) -> Any:
    """The actions of group `g` for its current request."""
    return self._retries.call(self._inference[g], *self.groups[g].request())

  def _send(self, g: int) -> futures.Future:
    return self._executor.submit(self._call, g)

  def step(self, stats: _EpisodeStats, inference_timer: _Timer, step_timer: _Timer) -> None:
    """Steps every environment once; the timers get each group's wait for its actions and its
    environments' step."""
    for g, group in enumerate(self.groups):
      start = time.time()
      if self._executor is None:
        action = self._call(g)
      else:
        action = self._pending[g].result()
      inference_timer.add(time.time() - start)
      start = time.time()
      group.step(action, stats)
      step_timer.add(time.time() - start)
      if self._executor is not None:
        self._pending[g] = self._send(g)

  def close(self) -> None:
    """Closes the clients (ending calls in flight), then the environments."""
    self._retries.stop()
    for client in self.clients:
      client.close()
    if self._executor is not None:
      self._executor.shutdown(wait=True)
    for group in self.groups:
      group.env.close()


def _act(create_env_fn, config, log_period: float, max_steps: Optional[int]) -> None:
  """One connection's worth of acting: until `max_steps` steps or an RPC error."""
  client = _connect(config)
  try:
    transfer.update_config(config, client)
    try:
      checks.check_double_buffering(config)
    except ValueError as e:
      raise FatalActorError(str(e)) from e
  except BaseException:
    client.close()
    raise
  acting = _Acting(create_env_fn, config, client)
  try:
    env_ids = np.concatenate([group.env_ids for group in acting.groups])
    address = actor_address(config.server_address)
    listed = ('' if address == config.server_address else
              f' (of --server_address={config.server_address}: an actor on another machine needs '
              'a gRPC address alone)')
    logging.info('Actor %d connected to %s%s; environments %d to %d%s.', config.task, address,
                 listed, env_ids[0], env_ids[-1],
                 ', double-buffered' if len(acting.groups) == 2 else '')
    render = config.render and config.task == 0

    stats = _EpisodeStats()
    inference_timer, step_timer = _Timer(), _Timer()
    steps = steps_at_last_log = 0
    last_log_time = time.time()
    while max_steps is None or steps < max_steps:
      acting.step(stats, inference_timer, step_timer)
      if render:
        acting.groups[0].env.render()
      steps += 1

      now = time.time()
      if now - last_log_time >= log_period:
        episodes = ''
        if stats.returns:
          episodes = (f'Return: {np.mean(stats.returns):f} Raw return: '
                      f'{np.mean(stats.raw_returns):f} Episode steps: {np.mean(stats.steps):f}, ')
        logging.info(
            'Actor steps: %i, %sSpeed: %f steps/s (inference %.2f ms, env step %.2f ms per '
            'call)', steps, episodes,
            (steps - steps_at_last_log) * config.env_batch_size / (now - last_log_time),
            inference_timer.mean_ms(), step_timer.mean_ms())
        stats = _EpisodeStats()
        inference_timer, step_timer = _Timer(), _Timer()
        steps_at_last_log, last_log_time = steps, now
  finally:
    acting.close()


def _first_line(error: Exception) -> str:
  """The line of an RPC error that says what went wrong (TensorFlow's errors start with where
  the failing op was defined)."""
  noise = ('Graph execution error', 'Detected at node', 'File ', '[[')
  lines = [line.strip() for line in str(error).splitlines()]
  lines = [line for line in lines if line and not line.startswith(noise)]
  return lines[0] if lines else type(error).__name__


def actor_loop(create_env_fn: Callable[[int, Any], Any], config: Any = None,
               log_period: float = 1, max_steps: Optional[int] = None) -> None:
  """Acts until the learner says that it finished training (or for `max_steps` inference
  calls), reconnecting to the learner whenever it goes away.

  Args:
    create_env_fn: `(env_id, config) -> gymnasium.Env`.
    config: flags `server_address`, `task`, `env_batch_size`, `double_buffered_acting`, `render`
      (and the grpc_* security flags); absl `FLAGS` by default. The learner's experiment flags
      are applied to it.
    log_period: seconds between progress lines.
    max_steps: stop after stepping every environment this many times (for tests and
      benchmarks); None: until the learner finishes training.

  Raises:
    FatalActorError: the learner refused this actor's calls (INVALID_ARGUMENT: e.g. env ids the
      learner does not have; RESOURCE_EXHAUSTED: e.g. a request larger than the server's limit)
      other than in a way that a later try can pass, or sent an invalid action; reconnecting
      would not help.
  """
  config = FLAGS if config is None else config
  reconnectable = (errors.error_classes(errors.UNAVAILABLE) +
                   errors.error_classes(errors.CANCELLED))
  refused = (errors.error_classes(errors.INVALID_ARGUMENT) +
             errors.error_classes(errors.RESOURCE_EXHAUSTED))
  while True:
    try:
      _act(create_env_fn, config, log_period, max_steps)
      return
    except refused as e:
      raise FatalActorError(
          f'The learner at {config.server_address} refused the calls of actor {config.task}: '
          f'{_first_line(e)}') from e
    except env_wrappers.InvalidActionError as e:
      raise FatalActorError(str(e)) from e
    except errors.TrainingFinishedError:
      logging.info('The learner at %s finished training; this actor stops.',
                   config.server_address)
      return
    except reconnectable as e:
      logging.info('Inference call failed: the learner stopped or restarts; reconnecting. (%s)',
                   _first_line(e))
      time.sleep(1)
