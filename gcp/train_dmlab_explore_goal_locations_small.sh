#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level explore_goal_locations_small on Vertex AI: the
# original's gcp/train_dmlab_explore_goal_locations_small.sh scenario and its tuned
# hyper-parameters. Learner: n1-standard-8 with one GPU; actors: 50 n1-standard-4 machines with
# 8 actors each (400 environments).
#
#   gcp/train_dmlab_explore_goal_locations_small.sh [--dry-run] [--flag=value ...]
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=dmlab
AGENT=vtrace
SCENARIO=dmlab_explore_goal_locations_small
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 50 8
HPARAMS=(
  --game=explore_goal_locations_small
  --inference_batch_size=64
  --batch_size=32
  --entropy_cost=0.0009705614902108625
  --lambda_=0.95
  --learning_rate=0.00022587896096859582
  --adam_epsilon=3.125e-9
  --max_abs_reward=1
)

start_training "$@"
