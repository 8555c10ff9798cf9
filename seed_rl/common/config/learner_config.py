"""`LearnerConfig`: the typed, frozen configuration every learner reads (TensorFlow-free).

Each agent extends it with its own fields in `seed_rl/agents/<agent>/config.py` (as Acme's
`config.py`) and changes the defaults that differ between agents. An entry point builds one config
from the flags with `from_flags` and hands it to the agent and to the learner runtime; code reads
its fields, never probes for them. A shared flag left unset (None) takes the default of the agent
whose config reads it, so the defaults never depend on which agents' flag modules a process
imported (`learner_flags`).
"""

import dataclasses
from typing import Any, ClassVar, Optional, Tuple, Type, TypeVar

from absl import flags

from seed_rl.common.config import flag_config

_Config = TypeVar('_Config', bound='LearnerConfig')

#: Fields every learner needs positive.
POSITIVE_FIELDS = ('batch_size', 'unroll_length', 'unroll_queue_max_size',
                   'save_checkpoint_secs', 'log_episode_frequency', 'checkpoints_to_keep')


@dataclasses.dataclass(frozen=True)
class LearnerConfig(flag_config.FlagConfig):
  """What every learner reads: the flags of `common_flags` and `learner_flags` (same names).

  Attributes:
    logdir: TensorFlow log and checkpoint directory.
    server_address: address the learner serves the actors on (`host:port`, `[::]:port`,
      `unix:/path`, `shm:NAME`).
    num_envs: environments over all actors (number of actors x `env_batch_size`).
    env_batch_size: environments per actor; one inference call carries all of them.
    num_eval_envs: environments (the highest ids) used only for evaluation.
    num_action_repeats: times each action is repeated; counts frames.
    seed: if set, seeds TensorFlow on the learner.
    double_buffered_acting: each actor steps half its environments while the other half waits
      (needs an even `env_batch_size`).
    grpc_token_file: file holding the token actors must present; None: no token.
    grpc_tls_cert_file: PEM certificate chain to serve over TLS; None: no TLS.
    grpc_tls_key_file: PEM private key of `grpc_tls_cert_file`.
    save_checkpoint_secs: seconds between checkpoints (and exports of the policy).
    total_environment_frames: environment frames to train for (agent steps x
      `num_action_repeats`).
    batch_size: unrolls per training step.
    inference_batch_size: rows per inference batch; -1: max(env_batch_size, num_envs // 2),
      resolved by `checks.validate_runtime_config`.
    unroll_length: agent steps per unroll (plus one bootstrap step).
    num_training_tpus: TPU cores used for training (must be 1).
    checkpoints_to_keep: latest checkpoints kept in the logdir.
    init_checkpoint: checkpoint to start from when the logdir holds none.
    unroll_queue_max_size: completed unrolls waiting for training before inference blocks.
    discounting: discount factor.
    log_episode_frequency: episodes averaged into one point of the episode summaries.
    fresh_start: start from scratch although the logdir holds checkpoints that cannot be
      restored (they are moved aside).
    actor_takeover_grace_secs: seconds an actor may stay silent before another may take its
      environments over.
    refuse_observations_above: float observations beyond this absolute value are refused for
      the calling actor; 0: no bound.
    refuse_rewards_above: rewards beyond this absolute value are refused for the calling actor;
      0: no bound.
    mixed_precision: 'bfloat16' runs a CPU learner's matrix products and convolutions in
      bfloat16; 'auto' where the CPU has native bfloat16; 'off': float32 (`precision`).
    flag_values: the flags the config was read from (`from_flags`), None for a config made in
      code. Environment factories receive them (`env_config`), the learner records them in its
      logdir and sends their non-default values to the actors. Not compared.
  """
  #: The fields the learner's checks need positive (`checks.validate_runtime_config`).
  positive_fields: ClassVar[Tuple[str, ...]] = POSITIVE_FIELDS
  #: What `from_flags` names when a flag is missing: the module whose import defines the flags.
  flags_module: ClassVar[str] = 'seed_rl.common.config.learner_flags'
  unflagged_fields: ClassVar[Tuple[str, ...]] = ('flag_values',)

  logdir: str = '/tmp/agent'
  server_address: str = 'localhost:8686'
  num_envs: int = 4
  env_batch_size: int = 1
  num_eval_envs: int = 0
  num_action_repeats: int = 1
  seed: Optional[int] = None
  double_buffered_acting: bool = False
  grpc_token_file: Optional[str] = None
  grpc_tls_cert_file: Optional[str] = None
  grpc_tls_key_file: Optional[str] = None
  save_checkpoint_secs: int = 1800
  total_environment_frames: float = 1e9
  batch_size: int = 32
  inference_batch_size: int = -1
  unroll_length: int = 100
  num_training_tpus: int = 1
  checkpoints_to_keep: int = 3
  init_checkpoint: Optional[str] = None
  unroll_queue_max_size: int = 1
  discounting: float = .99
  log_episode_frequency: int = 1
  fresh_start: bool = False
  actor_takeover_grace_secs: float = 60.
  refuse_observations_above: float = 1e9
  refuse_rewards_above: float = 1e9
  mixed_precision: str = 'off'
  flag_values: Optional[flags.FlagValues] = dataclasses.field(default=None, compare=False,
                                                               repr=False)

  @property
  def env_config(self) -> Any:
    """What `create_env_fn(env_id, config)` receives: the flags the config was read from (the
    environment's flags, e.g. `--env_name`, are among them), else the config itself."""
    return self if self.flag_values is None else self.flag_values

  @classmethod
  def from_flags(cls: Type[_Config], flag_values: flags.FlagValues = flags.FLAGS,
                 **overrides: Any) -> _Config:
    """The config of the flags `flag_values` (parsed or not: unparsed flags give defaults).

    A flag whose value is None takes the field's default: the shared flags that agents set
    differently default to None, meaning "the agent's default". `overrides` replace fields.

    Raises:
      ValueError: a field's flag is not defined, naming it and the module that defines it.
    """
    return cls(flag_values=flag_values, **cls.flag_field_values(flag_values, overrides))
