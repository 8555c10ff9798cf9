#!/usr/bin/env bash
# V-trace (IMPALA) on Google Research Football on Vertex AI: the original's
# gcp/train_football_scoring.sh scenario, 11_vs_11_hard_stochastic with the reward scoring
# (goals only) and its tuned hyper-parameters. Learner: n1-standard-8 with one GPU; actors: 25
# n1-standard-4 machines with 8 actors each (200 environments).
#
#   gcp/train_football_scoring.sh [--dry-run] [--flag=value ...]
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=football
AGENT=vtrace
SCENARIO=football_scoring
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 25 8
HPARAMS=(
  --game=11_vs_11_hard_stochastic
  --reward_experiment=scoring
  --inference_batch_size=64
  --batch_size=32
  --unroll_length=32
  --total_environment_frames=5e8
  --discounting=0.997
  --entropy_cost=3.1948e-5
  --lambda_=0.9
  --learning_rate=5.5339e-5
)

start_training "$@"
