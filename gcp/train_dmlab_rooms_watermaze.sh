#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level rooms_watermaze on Vertex AI: the original's
# gcp/train_dmlab_rooms_watermaze.sh scenario and its tuned hyper-parameters. Learner:
# n1-standard-8 with one GPU; actors: 50 n1-standard-4 machines with 8 actors each (400
# environments).
#
#   gcp/train_dmlab_rooms_watermaze.sh [--dry-run] [--flag=value ...]
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=dmlab
AGENT=vtrace
SCENARIO=dmlab_rooms_watermaze
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 50 8
HPARAMS=(
  --game=rooms_watermaze
  --inference_batch_size=64
  --batch_size=32
  --entropy_cost=1e-5
  --lambda_=0.99
  --learning_rate=1e-4
  --adam_epsilon=3.125e-7
  --max_abs_reward=1
)

start_training "$@"
