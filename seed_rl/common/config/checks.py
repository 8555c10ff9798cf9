"""The checks of a learner's flags that need neither TensorFlow nor an environment.

The learner makes them before it starts, and `flag_check` makes them for run_local.sh and
gcp/train_*.sh before anything starts, so both refuse the same configurations in the same
words: one line naming the flags and what to change.
"""

import dataclasses
import operator
from typing import Any, Optional

from seed_rl.common.config import learner_config


def validate_learner_config(config: Any, num_hosts: int = 1,
                            num_envs_source: Optional[str] = None) -> None:
  """Checks the learner's batch sizes; resolves `inference_batch_size=-1` in place (the
  original's function, on flags or another mutable config).

  Raises:
    ValueError: naming the flags to change.
  """
  config.inference_batch_size = inference_batch_size(config, num_hosts, num_envs_source)


def inference_batch_size(config: Any, num_hosts: int = 1,
                         num_envs_source: Optional[str] = None) -> int:
  """The learner's inference batch size (`inference_batch_size`, -1 resolved), checked.

  The server only runs full inference batches, so a batch must be a whole number of actor
  calls and there must be enough environments to fill one per host. `num_envs_source` says
  where `--num_envs` came from, for the messages (e.g. "NUM_ACTORS x ENV_BATCH_SIZE = 2 x 4").

  Raises:
    ValueError: naming the flags to change.
  """
  num_envs_is = f'--num_envs={config.num_envs}' + (
      f' ({num_envs_source})' if num_envs_source else '')
  if config.num_envs <= 0:
    raise ValueError(f'{num_envs_is} must be positive')
  if config.env_batch_size <= 0:
    raise ValueError(f'--env_batch_size must be positive, got {config.env_batch_size}')
  given = config.inference_batch_size != -1
  size = (config.inference_batch_size if given else
          max(config.env_batch_size, config.num_envs // (2 * num_hosts)))
  if size <= 0:
    raise ValueError(f'--inference_batch_size must be positive or -1, got {size}')
  what = (f'--inference_batch_size={size}' if given else
          f'the inference batch size ({size}, from --inference_batch_size=-1)')
  if size % config.env_batch_size:
    raise ValueError(
        f'{what} must be a multiple of --env_batch_size={config.env_batch_size}: an inference '
        'batch is made of whole actor calls')
  if config.num_envs < size * num_hosts:
    hosts = f' x {num_hosts} hosts' if num_hosts > 1 else ''
    fitting = config.num_envs // num_hosts
    raise ValueError(
        f'{what}{hosts} is more than {num_envs_is}: the learner runs full inference batches '
        'only and would wait forever; use --inference_batch_size='
        f'{fitting - fitting % config.env_batch_size} or less, or more environments')
  return size


def check_double_buffering(config: Any) -> None:
  """Raises ValueError when `--double_buffered_acting` cannot split an actor's environments."""
  if config.double_buffered_acting and config.env_batch_size % 2:
    raise ValueError('--double_buffered_acting splits the environments of each actor into two '
                     f'halves: --env_batch_size must be even, got {config.env_batch_size}')


def validate_runtime_config(config: learner_config.LearnerConfig,
                            num_envs_source: Optional[str] = None) -> learner_config.LearnerConfig:
  """The checks of `validate_learner_config` and `check_double_buffering`, and the counts the
  config's learner needs positive (its `positive_fields`; None, an unset shared flag, stands for
  the agent's default, which is).

  Returns:
    A new config, with `inference_batch_size` resolved.

  Raises:
    ValueError: naming the flag to change.
  """
  size = inference_batch_size(config, num_envs_source=num_envs_source)
  check_double_buffering(config)
  config = dataclasses.replace(config, inference_batch_size=size)
  for name in config.positive_fields:
    value = operator.attrgetter(name)(config)
    if value is not None and value <= 0:
      raise ValueError(f'--{name} must be positive, got {value}')
  if config.num_envs <= config.num_eval_envs:
    raise ValueError(
        f'--num_eval_envs={config.num_eval_envs} leaves no training environment of '
        f'--num_envs={config.num_envs}: no unroll would ever be trained on and training would '
        'wait forever; use fewer evaluation environments')
  return config
