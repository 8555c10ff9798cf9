#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level rooms_watermaze on Vertex AI: the
# original's gcp/train_dmlab_rooms_watermaze.sh scenario. The same as
# `gcp/train_dmlab.sh rooms_watermaze`, which holds the settings.
#
#   gcp/train_dmlab_rooms_watermaze.sh [--dry-run] [--flag=value ...]
exec "$(dirname "$0")/train_dmlab.sh" rooms_watermaze "$@"
