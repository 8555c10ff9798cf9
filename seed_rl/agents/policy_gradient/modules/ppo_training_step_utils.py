"""PPO's training step under the original's module path; the epochs of minibatch steps live in
`seed_rl.common.minibatches`."""

# pylint: disable=unused-import  (the original's public names)
from seed_rl.common.minibatches import BATCH_MODES
from seed_rl.common.minibatches import compute_advantages_and_split
from seed_rl.common.minibatches import minibatch_indices
from seed_rl.common.minibatches import minibatch_loss
from seed_rl.common.minibatches import ppo_training_step
from seed_rl.common.minibatches import SPLIT_MODES
from seed_rl.common.minibatches import split_into_transitions
from seed_rl.common.minibatches import train_epochs
from seed_rl.common.minibatches import Transitions
from seed_rl.common.minibatches import unroll_advantages
