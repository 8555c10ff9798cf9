"""PopArt under the original's module path; it lives in `seed_rl.common.training.popart`."""

# pylint: disable=unused-import  (the original's public names)
from seed_rl.common.training.popart import IdentityNormalizer
from seed_rl.common.training.popart import PopArt
