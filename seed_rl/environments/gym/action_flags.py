"""`define`: the flags of the Gymnasium factory's fields beyond `--env_name` (the discretization
of Box actions and the render mode), shared by the gym and MuJoCo flag modules, which define
`--env_name` each with their own default and help."""

from absl import flags

from seed_rl.environments.gym import env_config


def define(defaults: env_config.GymConfig, render_note: str = '') -> None:
  """Defines `--discretization`, `--n_actions_per_dim`, `--action_ratio` and `--render_mode`
  in absl's FLAGS with the values of `defaults`; `render_note` ends `--render_mode`'s help."""
  flags.DEFINE_enum('discretization', defaults.discretization, list(env_config.DISCRETIZATIONS),
                    'Discretization of a Box action space into MultiDiscrete: none (keep it '
                    'continuous), lin (evenly spaced values) or log (logarithmic grid).')
  flags.DEFINE_integer('n_actions_per_dim', defaults.n_actions_per_dim,
                       'Number of actions per dimension when discretized (odd for log).')
  flags.DEFINE_float('action_ratio', defaults.action_ratio,
                     'Ratio between the largest and the smallest positive action of the log '
                     'discretization.')
  flags.DEFINE_string('render_mode', defaults.render_mode,
                      "Gymnasium render mode of the environment ('rgb_array' for videos, as "
                      f'seed_rl.evaluate --video sets it); unset: no rendering.{render_note}')
