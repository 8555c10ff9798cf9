#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level lasertag_three_opponents_small on Vertex AI: the
# original's gcp/train_dmlab_lasertag_three_opponents_small.sh scenario. The same as
# `gcp/train_dmlab.sh lasertag_three_opponents_small`, which holds the settings.
#
#   gcp/train_dmlab_lasertag_three_opponents_small.sh [--dry-run] [--flag=value ...]
exec "$(dirname "$0")/train_dmlab.sh" lasertag_three_opponents_small "$@"
