#!/usr/bin/env bash
# MuJoCo HalfCheetah-v5 on Vertex AI. By default PPO (the configurable on-policy agent,
# seed_rl.environments.mujoco.ppo_main) with the original's gcp/train_mujoco.sh settings: its
# machines (learner: standard_p100, here n1-standard-8 with one P100; actors: 4 "standard"
# machines, here n1-standard-4, with one actor each, 4 environments) and its hyper-parameters
# (2M frames, steps of 2048 transitions in 10 epochs of 64-transition minibatches, unrolls of 16,
# Adam lr 3e-4 without decay, gradient norm clipped at 0.5, split batches). Translated:
# HalfCheetah-v2 (mujoco-py) is Gymnasium's HalfCheetah-v5; --gin_config is left out because
# the entry point's default is the packaged gin/ppo.gin, the original's mujoco/gin/ppo.gin;
# --batches_per_step=0 is left out because here --step_size_transitions alone sets the
# minibatches per step (the flag's default, 1, means "not given"); the original's one-trial
# hyper-parameter "search" of AI Platform becomes plain flags.
#
#   gcp/train_mujoco.sh [--dry-run] [--flag=value ...]        e.g. --env_name=Hopper-v5
#   MUJOCO_AGENT=sac gcp/train_mujoco.sh [--dry-run] ...      SAC instead of PPO
#
# MUJOCO_AGENT picks the agent, each with its machine shape and flags below:
#   ppo     the default, as above.
#   sac     the hyper-parameters of the SAC paper (Haarnoja et al. 2018): Adam lr 3e-4, batch
#           256, replay of 1M transitions, discount 0.99, target networks updated with tau 0.005
#           (polyak 0.995), the entropy cost adapted towards an entropy of -6 (minus the action
#           dimension), for 3M frames; 4 actor machines with 4 actors each (16 environments).
#   vtrace  V-trace with normalized observations, 4 actor machines with 4 actors each.
# Other configuration by environment variables (project, region, bucket, machine shape): see
# gcp/setup.sh.
set -euo pipefail
# shellcheck source=gcp/setup.sh
source "$(dirname "$0")/setup.sh"

ENVIRONMENT=mujoco
AGENT="${MUJOCO_AGENT:-ppo}"
SCENARIO="mujoco_$AGENT"
# machine_shape: learner machine, its accelerator and count; actor machine, machines, actors on
# each.
case "$AGENT" in
  ppo)
    machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 4 1
    HPARAMS=(
      --env_name=HalfCheetah-v5
      --total_environment_frames=2000000
      --batch_mode=split
      --epochs_per_step=10
      --lr_decay_multiplier=0
      --step_size_transitions=2048
      --batch_size_transitions=64
      --unroll_length=16
      --learning_rate=3e-4
      --clip_norm=0.5
      --batch_size=0
    );;
  sac)
    machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 4 4
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
    machine_shape n1-standard-8 NVIDIA_TESLA_P100 1 n1-standard-4 4 4
    HPARAMS=(
      --env_name=HalfCheetah-v5
      --learning_rate=3e-4
      --normalize_observations
      --batch_size=32
      --unroll_length=64
      --total_environment_frames=1e7
    );;
  *)
    _seed_rl_gcp_die "MUJOCO_AGENT must be ppo, sac or vtrace, got '$AGENT'";;
esac

start_training "$@"
