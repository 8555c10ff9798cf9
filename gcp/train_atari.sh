#!/usr/bin/env bash
# R2D2 on Atari (Pong) on Vertex AI: the original's gcp/train_atari.sh scenario, after the SEED
# paper (arXiv 1910.06591, appendix A.3.1). Learner: n1-highmem-32 (RAM for a replay buffer of
# 100 000 unrolls) with 2 GPUs, which seed_rl uses both of; actors: 32 n1-standard-4 machines
# with 20 actors each (640 environments). `num_eval_envs` is the flag the original's
# `num_eval_actors` meant (that flag does not exist).
#
#   gcp/train_atari.sh [--dry-run] [--flag=value ...]     e.g. --game=Breakout
#
# Configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=atari
AGENT=r2d2
SCENARIO=atari
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-highmem-32 NVIDIA_TESLA_P100 2 n1-standard-4 32 20
HPARAMS=(
  --game=Pong
  --inference_batch_size=32
  --batch_size=64
  --replay_buffer_min_size=5000
  --replay_buffer_size=100000
  --total_environment_frames=50e9
  --replay_ratio=0.75
  --unroll_length=80
  --learning_rate=1e-4
  --num_eval_envs=30
  --burn_in=40
  --clip_norm=80
)

start_training "$@"
