"""Flags of the DeepMind Lab environment, shared by the DMLab entry points (names of the original):
the fields of `env_config.DmLabConfig`, whose defaults they take.

Also makes 4 the default `--num_action_repeats` for DMLab: the original left the common default
of 1, while IMPALA and the SEED paper act every 4 frames (google-research/seed_rl#76).
"""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)
from seed_rl.environments.dmlab import env_config

_DEFAULTS = env_config.DmLabConfig()

flags.DEFINE_string('homepath', _DEFAULTS.homepath,
                    'DeepMind Lab runfiles directory (deepmind_lab.set_runfiles_path); empty: '
                    'where the installed deepmind_lab module finds its assets.')
flags.DEFINE_string('dataset_path', _DEFAULTS.dataset_path,
                    'Directory of the image dataset the psychlab_* levels need (DeepMind Lab '
                    'data/brady_konkle_oliva2008); empty: not set.')
flags.DEFINE_string('game', _DEFAULTS.game,
                    'Level name; DMLab-30 names get the contributed/dmlab30/ prefix.')
flags.DEFINE_integer('width', _DEFAULTS.width, 'Width of the observations in pixels.')
flags.DEFINE_integer('height', _DEFAULTS.height, 'Height of the observations in pixels.')
flags.DEFINE_string('level_cache_dir', _DEFAULTS.level_cache_dir,
                    'Level cache directory shared by the actors (a local or mounted directory; '
                    'gs:// and other remote URLs go through tf.io.gfile); unset: no cache.')

flags.FLAGS.set_default('num_action_repeats', _DEFAULTS.num_action_repeats)
