"""Flags every learner shares (names of the original SEED RL), defined once.

Each agent's `learner_flags` module imports this one, sets the defaults that differ between
agents (`set_agent_defaults`) and defines its own flags with `define_agent_flag`, which defines a
flag only once when several agents have it (e.g. `--entropy_cost`). So the agents' flag modules
can be imported together: in a process that imports several, the agent imported last sets the
defaults of the flags they share.
"""

from typing import Any, Callable

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)

flags.DEFINE_integer('save_checkpoint_secs', 1800,
                     'Seconds between checkpoints (and exports of the policy).')
flags.DEFINE_float('total_environment_frames', int(1e9),
                   'Environment frames to train for (agent steps x num_action_repeats).')
flags.DEFINE_integer('batch_size', 32, 'Unrolls per training step.')
flags.DEFINE_integer('inference_batch_size', -1,
                     'Rows per inference batch on the learner; -1: '
                     'max(env_batch_size, num_envs // 2).')
flags.DEFINE_integer('unroll_length', 100, 'Agent steps per unroll (plus one bootstrap step).')
flags.DEFINE_integer('num_training_tpus', 1,
                     'TPU cores used for training (the original\'s; TPU learners are not '
                     'supported yet, so it must be 1).')
flags.DEFINE_integer('checkpoints_to_keep', 3,
                     'Latest checkpoints kept in the logdir; a learner that cannot read the '
                     'latest one falls back to the one before.')
flags.DEFINE_string('init_checkpoint', None,
                    'Checkpoint to start from when the logdir holds none.')
flags.DEFINE_integer('unroll_queue_max_size', 1,
                     'Completed unrolls waiting for training; inference blocks when the queue '
                     'is full (back-pressure on the actors).')
flags.DEFINE_float('discounting', .99, 'Discount factor.')
flags.DEFINE_integer('log_episode_frequency', 1,
                     'Episodes averaged into one TensorBoard point of the episode summaries.')
flags.DEFINE_bool('fresh_start', False,
                  'Start from scratch although the logdir holds checkpoints that cannot be '
                  'restored; they are moved aside into the logdir, never deleted. Without it, such '
                  'a learner stops and names the files.')
flags.DEFINE_float('actor_takeover_grace_secs', 60.,
                   'Seconds an actor may stay silent on an open connection before another actor '
                   '(new run ids for the same env ids) may take its environments over; a closed '
                   'connection frees them at once. An owner whose call waits in a stalled batch '
                   'longer than this looks silent too: keep it above start-up compilation and '
                   'checkpoint saves.')
flags.DEFINE_float('refuse_observations_above', 1e9,
                   'Float observations beyond this absolute value are refused for the calling '
                   'actor alone, like NaN; 0: no bound. The default keeps every square of an '
                   'observation finite in float32.')
flags.DEFINE_float('refuse_rewards_above', 1e9,
                   'Rewards beyond this absolute value are refused for the calling actor alone, '
                   'like NaN; 0: no bound. Not --max_abs_reward, which clips rewards in the loss.')


def set_agent_defaults(**defaults: Any) -> None:
  """Sets the defaults of shared flags to an agent's values (e.g. `batch_size=64`)."""
  for name, value in defaults.items():
    flags.FLAGS.set_default(name, value)


def define_agent_flag(define: Callable[..., Any], name: str, default: Any, help_text: str,
                      **kwargs: Any) -> None:
  """`define(name, default, help=help_text, **kwargs)` (e.g. `flags.DEFINE_float`), or, when
  another agent's flag module defined `name` already, only sets its default to `default`."""
  if name in flags.FLAGS:
    flags.FLAGS.set_default(name, default)
  else:
    define(name, default, help=help_text, **kwargs)
