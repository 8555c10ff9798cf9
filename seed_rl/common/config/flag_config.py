"""`FlagConfig`: a typed, frozen config read from absl flags of the same names (TensorFlow-free).

The learners' configs (`learner_config.LearnerConfig`) and the environments' (e.g.
`seed_rl.environments.gym.env_config.GymConfig`) are frozen dataclasses with this base: their
fields hold the defaults, `from_flags` reads the flags of the same names, and `of` accepts either
a config or the flags (the original's API passes absl's `FLAGS` to the learners and the
environment factories). Code reads the fields, never probes for them, so a missing or misspelt
field is an error where it is read.
"""

import dataclasses
from typing import Any, ClassVar, Dict, Tuple, Type, TypeVar

from absl import flags

_Config = TypeVar('_Config', bound='FlagConfig')


class UndefinedFlagError(ValueError):
  """A config reads a flag that the process does not define; `flag` is its name."""

  def __init__(self, message: str, flag: str):
    super().__init__(message)
    self.flag = flag


class FlagConfig:
  """Base of frozen dataclasses whose fields are flags; subclasses set `flags_module`."""
  #: What `from_flags` names when a flag is missing: the module whose import defines the flags.
  flags_module: ClassVar[str] = ''
  #: Fields that are not flags (`from_flags` leaves them to the subclass).
  unflagged_fields: ClassVar[Tuple[str, ...]] = ()

  @classmethod
  def flag_field_values(cls, flag_values: flags.FlagValues,
                        overrides: Dict[str, Any]) -> Dict[str, Any]:
    """The fields' values in `flag_values` (parsed or not: unparsed flags give defaults),
    `overrides` replacing them. A flag whose value is None takes the field's default.

    Raises:
      UndefinedFlagError: a field's flag is not defined, naming it and the module that defines
        it.
    """
    values = {}
    for field in dataclasses.fields(cls):
      if field.name in cls.unflagged_fields or field.name in overrides:
        continue
      if field.name not in flag_values:
        raise UndefinedFlagError(
            f'{cls.__name__} reads --{field.name}, which is not defined: import '
            f'{cls.flags_module} (it defines the flags) before reading the config.', field.name)
      value = flag_values[field.name].value
      values[field.name] = field.default if value is None else value
    values.update(overrides)
    return values

  @classmethod
  def from_flags(cls: Type[_Config], flag_values: flags.FlagValues = flags.FLAGS,
                 **overrides: Any) -> _Config:
    """The config of the flags `flag_values`; `overrides` replace fields (see
    `flag_field_values`).

    Raises:
      ValueError: a field's flag is not defined, or the config refuses a value.
    """
    return cls(**cls.flag_field_values(flag_values, overrides))

  @classmethod
  def of(cls: Type[_Config], config: Any) -> _Config:
    """`config` as this class: itself when it is one, `from_flags(config)` for absl flags
    (None: absl's `FLAGS`).

    Raises:
      TypeError: `config` is neither, naming its type and what to pass instead.
      ValueError: what `from_flags` raises.
    """
    if config is None:
      config = flags.FLAGS
    if isinstance(config, cls):
      return config
    if isinstance(config, flags.FlagValues):
      return cls.from_flags(config)
    raise TypeError(f'A {cls.__name__} or absl FlagValues is needed, got a '
                    f'{type(config).__name__}: build one with {cls.__name__}(...) or '
                    f'{cls.__name__}.from_flags().')
