"""Running mean and std trackers under the original's module path; they live in
`seed_rl.common.training.running_statistics`."""

# pylint: disable=unused-import  (the original's public names)
from seed_rl.common.training.running_statistics import AverageMeanStd
from seed_rl.common.training.running_statistics import EMAMeanStd
from seed_rl.common.training.running_statistics import FixedMeanStd
from seed_rl.common.training.running_statistics import MeanAndStd
from seed_rl.common.training.running_statistics import MeanStd
from seed_rl.common.training.running_statistics import merge_moments
from seed_rl.common.training.running_statistics import Scalar
from seed_rl.common.training.running_statistics import TwoLevelAverageMeanStd
