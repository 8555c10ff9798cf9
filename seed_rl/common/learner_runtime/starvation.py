"""Says why inference waits when its batches do not fill: too few actors for the batch size.

The server runs only full inference batches of `--inference_batch_size` rows. When fewer
environments call than a batch needs (the default `--num_envs=4` against one actor of one
environment, a crashed actor), the actors that did call wait forever and nothing trains. The
server shows its partially filled batches (`grpc.Server.pending_batches`); the logging thread
polls them with `StarvationWatch.check` and logs one warning that names the numbers and what to
change, again only when the situation changes or every `repeat_secs`, and one line when batches
fill again.
"""

import time
from typing import Any, Iterable, List, Optional, Sequence

from absl import logging
import numpy as np

# Seconds a batch must have waited without filling before the learner says why.
STARVING_AFTER_SECS = 10.
# Seconds after which the same starvation is reported again.
REPEAT_SECS = 600.
_INFERENCE = 'inference'


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
                       waiting_secs: float, num_envs: int, env_batch_size: int) -> str:
  """The warning for an inference batch of `batch_size` rows that has only `rows` of
  `callers` calls (environments `env_ids`) after `waiting_secs` seconds."""
  missing = sorted(set(range(num_envs)) - set(int(i) for i in env_ids))
  tasks = sorted(set(i // env_batch_size for i in missing))
  plural = 's' if len(env_ids) != 1 else ''
  message = (
      f'Inference starved for {waiting_secs:.0f} s: a batch runs only with '
      f'--inference_batch_size={batch_size} rows, and only {rows} arrived (env id{plural} '
      f'{format_ids(env_ids)}, from {callers} actor call{"s" if callers != 1 else ""}); the '
      'actors are waiting for it and nothing trains. ')
  if missing:
    message += (f'With --num_envs={num_envs}, env ids {format_ids(missing)} did not call: start '
                f'their actors (task{"s" if len(tasks) != 1 else ""} {format_ids(tasks)} with '
                f'--env_batch_size={env_batch_size}), or set --num_envs = actors x --env_batch_size ')
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
  """Polls a server's inference batch and warns when it waits without filling.

  Args:
    server: a `grpc.Server` (anything with `pending_batches(min_waiting_secs)`).
    config: the learner's flags (`inference_batch_size`, `num_envs`, `env_batch_size`).
    starving_after_secs: how long a batch waits before the warning.
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

  def check(self, now: Optional[float] = None) -> Optional[str]:
    """Logs a warning when the inference batch starves (returns it, else None); cheap."""
    now = time.monotonic() if now is None else now
    starving = [p for p in self._server.pending_batches(self._after)
                if p.method == _INFERENCE and p.waiting_secs >= self._after and
                p.executions_in_flight == 0 and p.inputs is not None]
    if not starving:
      if self._reported is not None:
        logging.info('Inference batches fill again: training goes on.')
        self._reported = None
      return None
    pending = starving[0]
    env_ids = np.unique(pending.inputs[0]).tolist()  # The first input is the env ids.
    situation = (pending.rows, pending.callers, tuple(env_ids))
    if situation == self._reported and now - self._reported_at < self._repeat:
      return None
    config = self._config
    message = starvation_message(pending.batch_size, pending.rows, pending.callers, env_ids,
                                 pending.waiting_secs, config.num_envs, config.env_batch_size)
    logging.warning('%s', message)
    self._reported, self._reported_at = situation, now
    return message
