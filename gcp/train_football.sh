#!/usr/bin/env bash
# V-trace (IMPALA) on Google Research Football on Vertex AI: the original's football scenarios,
# 11_vs_11_hard_stochastic with their tuned hyper-parameters, by reward:
#   scoring      goals only (the default; gcp/train_football_scoring.sh)
#   checkpoints  goals plus the checkpoint shaping, reward scoring,checkpoints
#                (gcp/train_football_checkpoints.sh)
# Learner: n1-standard-8 with one GPU; actors: 25 n1-standard-4 machines with 8 actors each (200
# environments).
#
#   gcp/train_football.sh [scoring|checkpoints] [--dry-run] [--flag=value ...]
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

# The scenario: the first argument that is not an option.
take_scenario_argument scoring "$@"
reward="$SCENARIO_ARG"
SCENARIO_CHOICES="[scoring|checkpoints]"  # For the usage message.

ENVIRONMENT=football
AGENT=vtrace
SCENARIO="football_$reward"
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 25 8
# The scenarios' tuned values: the reward, then entropy cost, lambda and learning rate.
case "$reward" in
  scoring) tuned=(scoring 3.1948e-5 0.9 5.5339e-5);;
  checkpoints) tuned=("scoring,checkpoints" 7.3309e-4 1 1.2542e-4);;
  *) _seed_rl_gcp_die "unknown football scenario '$reward' (scoring or checkpoints)";;
esac
HPARAMS=(
  --game=11_vs_11_hard_stochastic
  "--reward_experiment=${tuned[0]}"
  --inference_batch_size=64
  --batch_size=32
  --unroll_length=32
  --total_environment_frames=5e8
  --discounting=0.997
  "--entropy_cost=${tuned[1]}"
  "--lambda_=${tuned[2]}"
  "--learning_rate=${tuned[3]}"
)

if [ ${#SCENARIO_ARGS[@]} -gt 0 ]; then start_training "${SCENARIO_ARGS[@]}"; else start_training; fi
