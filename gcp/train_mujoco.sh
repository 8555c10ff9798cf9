#!/usr/bin/env bash
# MuJoCo HalfCheetah-v5 on Vertex AI. The original's gcp/train_mujoco.sh ran PPO on
# HalfCheetah-v2 (mujoco-py); PPO is not part of seed_rl yet, so this runs SAC by default, with
# the hyper-parameters of the SAC paper (Haarnoja et al. 2018): Adam lr 3e-4, batch 256, replay
# of 1M transitions, discount 0.99, target networks updated with tau 0.005 (polyak 0.995) and the
# entropy cost adapted towards an entropy of -6 (minus the action dimension), for 3M frames.
# Learner: n1-standard-8 with one GPU (the original's standard_p100); actors: 4 n1-standard-4
# machines with 4 actors each (16 environments).
#
#   gcp/train_mujoco.sh [--dry-run] [--flag=value ...]        e.g. --env_name=Hopper-v5
#   MUJOCO_AGENT=vtrace gcp/train_mujoco.sh [--dry-run] ...   V-trace instead of SAC
#
# MUJOCO_AGENT picks the agent (sac, the default, or vtrace); each has its flags below, so a
# PPO entry point is one more case. Other configuration by environment variables (project,
# region, bucket, machine shape): see gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=mujoco
AGENT="${MUJOCO_AGENT:-sac}"
SCENARIO="mujoco_$AGENT"
# Learner machine, its accelerator and count; actor machine, machines, actors on each.
machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 4 4
case "$AGENT" in
  sac)
    HPARAMS=(
      --env_name=HalfCheetah-v5
      --learning_rate=3e-4
      --batch_size=256
      --unroll_length=1
      --replay_buffer_size=1000000
      --replay_ratio=4
      --discounting=0.99
      --polyak=0.995
      --entropy_cost=0.01
      --target_entropy=-6
      --total_environment_frames=3e6
    );;
  vtrace)
    # The original's V-trace MuJoCo entry point with normalized observations.
    HPARAMS=(
      --env_name=HalfCheetah-v5
      --learning_rate=3e-4
      --normalize_observations
      --batch_size=32
      --unroll_length=64
      --total_environment_frames=1e7
    );;
  *)
    _seed_rl_gcp_die "MUJOCO_AGENT must be sac or vtrace, got '$AGENT'";;
esac

start_training "$@"
