"""Flags of the V-trace learner (names and defaults of the original SEED RL).

Imported by the V-trace `*_main.py` entry points. `learner.learner_loop` reads these values from
its `config` argument (absl `FLAGS` by default), so importing the learner as a library defines no
flags.
"""

from absl import flags

from seed_rl.common import common_flags  # noqa: F401  (defines flags)

flags.DEFINE_integer('save_checkpoint_secs', 1800, 'Seconds between checkpoints.')
flags.DEFINE_float('total_environment_frames', int(1e9),
                   'Environment frames to train for (agent steps x num_action_repeats).')
flags.DEFINE_integer('batch_size', 32, 'Unrolls per training step.')
flags.DEFINE_integer('inference_batch_size', -1,
                     'Rows per inference batch on the learner; -1: '
                     'max(env_batch_size, num_envs // 2).')
flags.DEFINE_integer('unroll_length', 100, 'Agent steps per unroll (plus one bootstrap step).')
flags.DEFINE_integer('num_training_tpus', 1, 'TPU cores used for training.')
flags.DEFINE_string('init_checkpoint', None,
                    'Checkpoint to start from when the logdir holds none.')
flags.DEFINE_integer('unroll_queue_max_size', 1,
                     'Unrolls waiting for training; inference blocks when the queue is full '
                     '(back-pressure that keeps the data nearly on-policy).')
flags.DEFINE_float('entropy_cost', 0.00025, 'Entropy cost (initial value if adapted).')
flags.DEFINE_float('target_entropy', None,
                   'If set, the entropy cost is adapted to keep the policy entropy here.')
flags.DEFINE_float('entropy_cost_adjustment_speed', 10.,
                   'Speed of the entropy cost adaptation (multiplier of its log).')
flags.DEFINE_float('baseline_cost', .5, 'Weight of the value loss.')
flags.DEFINE_float('kl_cost', 0., 'Weight of the KL(behaviour || target) loss.')
flags.DEFINE_float('discounting', .99, 'Discount factor.')
flags.DEFINE_float('lambda_', 1., 'Lambda of V-trace (trace mixing).')
flags.DEFINE_float('max_abs_reward', 0.,
                   'Rewards are clipped to [-max_abs_reward, max_abs_reward]; 0: no clipping.')
flags.DEFINE_integer('log_episode_frequency', 1,
                     'Episodes averaged into one TensorBoard point of the episode summaries.')
