"""Says why inference waits when its batches do not fill, and runs a starved batch padded.

The server runs only full inference batches of `--inference_batch_size` rows. When fewer
environments call than a batch needs (the default `--num_envs=4` against one actor of one
environment, a crashed actor), or when the calls that did come do not add up to a batch (two
actors of 4 rows and one stray call of 1 row against batches of 8: 5 rows wait for 3 that never
come, while 4 more wait for the next batch), the actors that called would wait forever. The
server shows its partially filled batches (`grpc.Server.pending_batches`); the logging thread
polls them with `StarvationWatch.check`. A batch that has waited `STARVING_AFTER_SECS` while no
other batch was running runs then, padded with rows of env id `PADDING_ENV_ID` that the
learner's inference drops before it touches any per-env state (the server refuses env ids
outside `[0, num_envs)` from clients, so only the learner makes them): its callers get their
actions and the calls that waited for the next batch go on. A starved batch thus runs every
`STARVING_AFTER_SECS` instead of never, so training crawls rather than stops. One warning names
the numbers, what to change and that the batch ran padded, again only when the situation changes
or every `repeat_secs`; one line says when full batches run again.
"""

import time
from typing import Any, Iterable, List, Optional, Sequence

from absl import logging
import numpy as np

# Seconds a batch waits without filling before the learner says why and runs it padded.
STARVING_AFTER_SECS = 10.
# Seconds after which the same starvation is reported again.
REPEAT_SECS = 600.
# The env id of the rows that pad a starved batch: the learner's inference drops them.
PADDING_ENV_ID = -1
_INFERENCE = 'inference'


def fill_padding_rows(rows: Sequence[np.ndarray]) -> None:
  """Fills the missing rows of a starved inference batch (views of them per flat input, the env
  ids first): env id `PADDING_ENV_ID`, zeros elsewhere."""
  rows[0][...] = PADDING_ENV_ID
  for values in rows[1:]:
    values[...] = 0


def format_ids(ids: Iterable[int]) -> str:
  """`0-3, 6, 8-9` for [0, 1, 2, 3, 6, 8, 9]."""
  ids = sorted(set(int(i) for i in ids))
  ranges: List[List[int]] = []
  for i in ids:
    if ranges and ranges[-1][1] == i - 1:
      ranges[-1][1] = i
    else:
      ranges.append([i, i])
  return ', '.join(str(a) if a == b else f'{a}-{b}' for a, b in ranges)


def starvation_message(batch_size: int, rows: int, callers: int, env_ids: Sequence[int],
                       waiting_secs: float, num_envs: int, env_batch_size: int,
                       queued_rows: int = 0, queued_callers: int = 0,
                       queued_env_ids: Sequence[int] = (), padded: bool = False) -> str:
  """The warning for an inference batch of `batch_size` rows that has only `rows` of
  `callers` calls (environments `env_ids`) after `waiting_secs` seconds, while `queued_rows`
  rows of `queued_callers` calls (environments `queued_env_ids`) wait for the next batch;
  `padded`: the learner ran it padded."""
  called = set(int(i) for i in env_ids) | set(int(i) for i in queued_env_ids)
  missing = sorted(set(range(num_envs)) - called)
  tasks = sorted(set(i // env_batch_size for i in missing))
  plural = 's' if len(env_ids) != 1 else ''
  message = (
      f'Inference starved for {waiting_secs:.0f} s: a batch runs only with '
      f'--inference_batch_size={batch_size} rows, and only {rows} arrived (env id{plural} '
      f'{format_ids(env_ids)}, from {callers} actor call{"s" if callers != 1 else ""})')
  if queued_rows:
    message += (f', while {queued_rows} more row{"s" if queued_rows != 1 else ""} (env ids '
                f'{format_ids(queued_env_ids)}, {queued_callers} call'
                f'{"s" if queued_callers != 1 else ""}) did not fit into its '
                f'{batch_size - rows} free rows and wait for the next batch')
  if padded:
    message += (f'; it ran padded with {batch_size - rows} rows that the learner drops, as a '
                'starved batch does each time it has waited this long, so training crawls. ')
  else:
    message += '; the actors are waiting for it and nothing trains. '
  if missing:
    message += (f'With --num_envs={num_envs}, env ids {format_ids(missing)} did not call: start '
                f'their actors (task{"s" if len(tasks) != 1 else ""} {format_ids(tasks)} with '
                f'--env_batch_size={env_batch_size}), or set --num_envs = actors x '
                '--env_batch_size ')
    if callers and rows % callers == 0:
      message += (f'(--num_envs={rows} for the {callers} actor{"s" if callers != 1 else ""} '
                  f'of {rows // callers} env{"s" if rows // callers != 1 else ""} that called) ')
    message += (f'or a smaller --inference_batch_size (at most {rows} here, made of whole '
                'actor calls).')
  else:
    message += ('Every env id called, so --inference_batch_size must divide into the actors\' '
                f'calls: use an --inference_batch_size of at most {rows} made of whole calls of '
                f'--env_batch_size={env_batch_size} rows.')
  return message


class StarvationWatch(object):
  """Polls a server's inference batch, runs it padded and warns when it waits without filling.

  Args:
    server: a `grpc.Server` (anything with `pending_batches(min_waiting_secs)`).
    config: the learner's flags (`inference_batch_size`, `num_envs`, `env_batch_size`).
    starving_after_secs: how long a batch waits before the warning and its padded run.
    repeat_secs: how long the same starvation goes before it is reported again.
  """

  def __init__(self, server: Any, config: Any,
               starving_after_secs: float = STARVING_AFTER_SECS,
               repeat_secs: float = REPEAT_SECS):
    self._server = server
    self._config = config
    self._after = starving_after_secs
    self._repeat = repeat_secs
    self._reported: Optional[tuple] = None  # What the last warning was about.
    self._reported_at = 0.
    self._starved_at = 0.  # When a batch was last seen starving.
    self._full_batches = 0  # Full batches run then.

  def check(self, now: Optional[float] = None) -> Optional[str]:
    """Runs a starved inference batch padded and logs a warning (returns it, else None); cheap
    when batches fill."""
    now = time.monotonic() if now is None else now
    pending = [p for p in self._server.pending_batches(self._after) if p.method == _INFERENCE]
    starving = [p for p in pending if p.waiting_secs >= self._after and
                p.executions_in_flight == 0 and p.inputs is not None]
    if not starving:
      if self._reported is not None and self._fed(pending, now):
        logging.info('Inference batches fill again: training goes on.')
        self._reported = None
      return None
    batch = starving[0]
    padded = batch.run_padded is not None
    if padded and not batch.run_padded(fill_padding_rows):
      return None  # Rows arrived as it was seen: the next check looks again.
    self._starved_at, self._full_batches = now, batch.full_batches
    env_ids = np.unique(batch.inputs[0]).tolist()  # The first input is the env ids.
    queued_env_ids = (np.unique(batch.queued_inputs[0]).tolist()
                      if batch.queued_inputs is not None else [])
    situation = (batch.rows, batch.callers, tuple(env_ids), tuple(queued_env_ids))
    if situation == self._reported and now - self._reported_at < self._repeat:
      return None
    config = self._config
    message = starvation_message(batch.batch_size, batch.rows, batch.callers, env_ids,
                                 batch.waiting_secs, config.num_envs, config.env_batch_size,
                                 batch.queued_rows, batch.queued_callers, queued_env_ids,
                                 padded)
    logging.warning('%s', message)
    self._reported, self._reported_at = situation, now
    return message

  def _fed(self, pending: Sequence[Any], now: float) -> bool:
    """Whether full batches run again since the last starving one: one ran since (`pending`,
    the partially filled inference batches, shows it), or none is waiting a while later."""
    if pending:
      return pending[0].full_batches > self._full_batches
    return now - self._starved_at >= self._after
