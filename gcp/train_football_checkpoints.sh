#!/usr/bin/env bash
# V-trace (IMPALA) on Google Research Football on Vertex AI: the original's
# gcp/train_football_checkpoints.sh scenario, 11_vs_11_hard_stochastic with the reward
# scoring,checkpoints (goals plus the checkpoint shaping). The same as
# `gcp/train_football.sh checkpoints`, which holds the settings.
#
#   gcp/train_football_checkpoints.sh [--dry-run] [--flag=value ...]
exec "$(dirname "$0")/train_football.sh" checkpoints "$@"
