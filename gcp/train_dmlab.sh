#!/usr/bin/env bash
# V-trace (IMPALA) on a DeepMind Lab level on Vertex AI: the original's gcp/train_dmlab_<level>.sh
# scenarios with each level's tuned hyper-parameters. LEVEL (default
# explore_goal_locations_small) is one of
#   explore_goal_locations_small  lasertag_three_opponents_small  rooms_keys_doors_puzzle
#   rooms_watermaze
# (gcp/train_dmlab_<level>.sh runs the same). Learner: n1-standard-8 with one GPU; actors: 50
# n1-standard-4 machines with 8 actors each (400 environments).
#
#   gcp/train_dmlab.sh [LEVEL] [--dry-run] [--flag=value ...]
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

# The level: the first argument that is not an option.
take_scenario_argument explore_goal_locations_small "$@"
level="$SCENARIO_ARG"
SCENARIO_CHOICES="[LEVEL]"  # For the usage message.

ENVIRONMENT=dmlab
AGENT=vtrace
SCENARIO="dmlab_$level"
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 50 8
# The levels' tuned values: entropy cost, lambda, learning rate and Adam epsilon.
case "$level" in
  explore_goal_locations_small)
    tuned=(0.0009705614902108625 0.95 0.00022587896096859582 3.125e-9);;
  lasertag_three_opponents_small)
    tuned=(0.0013043623417080615 0.9 0.000398313170083425 3.125e-11);;
  rooms_keys_doors_puzzle)
    tuned=(0.002 0.922 1e-4 3.125e-11);;
  rooms_watermaze)
    tuned=(1e-5 0.99 1e-4 3.125e-7);;
  *)
    _seed_rl_gcp_die "no tuned scenario for the DeepMind Lab level '$level' (one of" \
      "explore_goal_locations_small, lasertag_three_opponents_small, rooms_keys_doors_puzzle," \
      "rooms_watermaze; another level: one of those with --game=LEVEL)";;
esac
HPARAMS=(
  "--game=$level"
  --inference_batch_size=64
  --batch_size=32
  "--entropy_cost=${tuned[0]}"
  "--lambda_=${tuned[1]}"
  "--learning_rate=${tuned[2]}"
  "--adam_epsilon=${tuned[3]}"
  --max_abs_reward=1
)

if [ ${#SCENARIO_ARGS[@]} -gt 0 ]; then start_training "${SCENARIO_ARGS[@]}"; else start_training; fi
