"""Logging from inside tf.Modules under the original's module path; it lives in
`seed_rl.common.training.logging_module`."""

# pylint: disable=unused-import  (the original's public names)
from seed_rl.common.training.logging_module import LoggingModule
from seed_rl.common.training.logging_module import LoggingTape
from seed_rl.common.training.logging_module import ModuleAlreadyTapedError
from seed_rl.common.training.logging_module import ModuleOrModules
