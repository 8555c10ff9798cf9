#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level lasertag_three_opponents_small on Vertex AI: the
# original's gcp/train_dmlab_lasertag_three_opponents_small.sh scenario and its tuned
# hyper-parameters. Learner: n1-standard-8 with one GPU; actors: 50 n1-standard-4 machines with
# 8 actors each (400 environments).
#
#   gcp/train_dmlab_lasertag_three_opponents_small.sh [--dry-run] [--flag=value ...]
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=dmlab
AGENT=vtrace
SCENARIO=dmlab_lasertag_three_opponents_small
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 50 8
HPARAMS=(
  --game=lasertag_three_opponents_small
  --inference_batch_size=64
  --batch_size=32
  --entropy_cost=0.0013043623417080615
  --lambda_=0.9
  --learning_rate=0.000398313170083425
  --adam_epsilon=3.125e-11
  --max_abs_reward=1
)

start_training "$@"
