#!/usr/bin/env bash
# V-trace (IMPALA) on the DeepMind Lab level rooms_keys_doors_puzzle on Vertex AI: the
# original's gcp/train_dmlab_rooms_keys_doors_puzzle.sh scenario. The same as
# `gcp/train_dmlab.sh rooms_keys_doors_puzzle`, which holds the settings.
#
#   gcp/train_dmlab_rooms_keys_doors_puzzle.sh [--dry-run] [--flag=value ...]
exec "$(dirname "$0")/train_dmlab.sh" rooms_keys_doors_puzzle "$@"
