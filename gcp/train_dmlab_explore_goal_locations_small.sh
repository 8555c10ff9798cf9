#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level explore_goal_locations_small on Vertex AI: the
# original's gcp/train_dmlab_explore_goal_locations_small.sh scenario. The same as
# `gcp/train_dmlab.sh explore_goal_locations_small`, which holds the settings.
#
#   gcp/train_dmlab_explore_goal_locations_small.sh [--dry-run] [--flag=value ...]
exec "$(dirname "$0")/train_dmlab.sh" explore_goal_locations_small "$@"
