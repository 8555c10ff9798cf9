"""Mixed precision on the learner's CPU: `--mixed_precision`.

With `bfloat16`, TensorFlow's graph optimizer rewrites each function the learner runs (the
inference function, the training step) so that oneDNN's matrix products and convolutions, and
their gradients, compute in bfloat16, with casts around them: the variables, the optimizer's
update, the losses and everything the agent reads or writes stay float32, and so do checkpoints
and the exported policy (the rewrite happens when a function runs, not in what is saved). On a
CPU with native bfloat16 (AMX or AVX512-BF16) the network's compute costs much less; the
products' inputs keep bfloat16's 8 bits of mantissa, as on the TPUs the original trained on
(their default for float32 matrix products).

The rewrite only converts ops placed on the CPU: a learner computing on GPUs is refused
`bfloat16` and keeps float32 with `auto`.
"""

from typing import Optional

from absl import logging
import tensorflow as tf

#: The values of `--mixed_precision`.
MODES = ('off', 'bfloat16', 'auto')
# The /proc/cpuinfo flags of native bfloat16 arithmetic.
_NATIVE_BFLOAT16_FLAGS = ('amx_bf16', 'avx512_bf16')
_GRAPPLER_OPTION = 'auto_mixed_precision_onednn_bfloat16'


def cpu_has_native_bfloat16(cpuinfo_path: str = '/proc/cpuinfo') -> bool:
  """Whether the CPU computes bfloat16 natively (AMX or AVX512-BF16); False where unknown."""
  try:
    with open(cpuinfo_path) as cpuinfo:
      for line in cpuinfo:
        if line.startswith('flags'):
          return any(flag in line.split() for flag in _NATIVE_BFLOAT16_FLAGS)
  except OSError:
    pass
  return False


def resolve(mode: str, device_type: str, native_bfloat16: bool) -> str:
  """The precision the learner computes in, 'bfloat16' or 'float32', for `--mixed_precision`.

  Args:
    mode: 'off' (float32), 'bfloat16', or 'auto' (bfloat16 where the learner computes on a CPU
      with native bfloat16, else float32).
    device_type: 'CPU' or 'GPU', what the learner computes on.
    native_bfloat16: whether the CPU computes bfloat16 natively.

  Raises:
    ValueError: an unknown mode, or `bfloat16` on a GPU learner.
  """
  if mode not in MODES:
    raise ValueError(f'--mixed_precision={mode!r}: use one of {", ".join(MODES)}')
  if mode == 'off':
    return 'float32'
  if device_type != 'CPU':
    if mode == 'bfloat16':
      raise ValueError(f'--mixed_precision=bfloat16 converts the ops of a learner computing on '
                       f'the CPU; this one computes on {device_type}s: use --mixed_precision=off '
                       'or auto')
    return 'float32'
  if mode == 'auto' and not native_bfloat16:
    return 'float32'
  return 'bfloat16'


def apply(mode: str, device_type: str, native_bfloat16: Optional[bool] = None) -> str:
  """Sets TensorFlow's graph optimizer for `--mixed_precision=mode` (`resolve`), for every
  function that runs from now on in this process; returns the precision chosen.

  Call it before the learner's functions first run: a function already run keeps its graph.
  """
  if native_bfloat16 is None:
    native_bfloat16 = cpu_has_native_bfloat16()
  precision = resolve(mode, device_type, native_bfloat16)
  tf.config.optimizer.set_experimental_options({_GRAPPLER_OPTION: precision == 'bfloat16'})
  if precision == 'bfloat16':
    logging.info('Mixed precision: matrix products and convolutions compute in bfloat16 on the '
                 'CPU (%s), variables and losses stay float32.',
                 'native' if native_bfloat16 else 'emulated: no AMX or AVX512-BF16, slower')
  elif mode == 'auto':
    logging.info('Mixed precision: float32 (--mixed_precision=auto: the learner computes on '
                 '%s%s).', device_type,
                 '' if device_type != 'CPU' else ' without native bfloat16')
  return precision
