"""PPO's training step under the original's module path; the epochs of minibatch steps live in
`seed_rl.common.training.minibatches`."""

# pylint: disable=unused-import  (the original's public names)
from seed_rl.common.training.minibatches import BATCH_MODES
from seed_rl.common.training.minibatches import compute_advantages_and_split
from seed_rl.common.training.minibatches import minibatch_indices
from seed_rl.common.training.minibatches import minibatch_loss
from seed_rl.common.training.minibatches import ppo_training_step
from seed_rl.common.training.minibatches import split_into_transitions
from seed_rl.common.training.minibatches import SPLIT_MODES
from seed_rl.common.training.minibatches import train_epochs
from seed_rl.common.training.minibatches import Transitions
from seed_rl.common.training.minibatches import unroll_advantages
