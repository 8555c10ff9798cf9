#!/usr/bin/env bash
# Runs a SEED RL experiment in the image docker/build.sh made: inside the container
# run_local.sh starts the learner, the actors and TensorBoard, in the tmux layout of the
# original (a session of the run's own, seed_rl_<logdir's name>_<hash>: the windows main,
# progress, learner, actor_0 ... actor_K-1, tensorboard) when this terminal is interactive, else
# in the background with one log per process.
#
#   docker/run.sh ENV AGENT NUM_ACTORS [ENV_BATCH_SIZE] [--flag=value ...]
#
# The arguments are run_local.sh's (it checks them). ENV picks the image: seed_rl:ENV (gym
# uses seed_rl:atari). The container is removed when it ends (./stop_local.sh --docker stops
# it, the learner checkpointing first); its /tmp/seed_rl, where
# run_local.sh keeps logdirs (checkpoints, summaries, logs), is the host's
# $SEED_RL_DOCKER_LOGDIR, so a second run resumes from the checkpoint. TensorBoard is on
# http://localhost:6006.
#
# Environment (defaults):
#   SEED_RL_IMAGE           the image (seed_rl:ENV)
#   SEED_RL_DOCKER_GPUS     value of `docker run --gpus` (auto: all when the host has an NVIDIA
#                           GPU docker can use, none otherwise); none: no GPU
#   SEED_RL_DOCKER_LOGDIR   host directory mounted on /tmp/seed_rl (/tmp/seed_rl_docker)
#   SEED_RL_CONTAINER_NAME  container name (seed_rl)
#   SEED_RL_TENSORBOARD_PORT  host port of TensorBoard (6006; none with SEED_RL_NO_TENSORBOARD)
#   SEED_RL_DOCKER_OPTS     more `docker run` options, split on spaces (e.g. "-v /data:/data")
#   SEED_RL_NO_TMUX, SEED_RL_NO_TENSORBOARD, SEED_RL_LOCAL_TRANSPORT  passed on to run_local.sh
#                           (its actors use shared memory inside the container, as on a host)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=docker/common.sh
source "$ROOT/docker/common.sh"

if [ $# -lt 3 ] || ! IMAGE_ENV="$(seed_rl_image_env "$1")"; then
  echo "Usage: $0 ENV AGENT NUM_ACTORS [ENV_BATCH_SIZE] [--flag=value ...]" >&2
  echo "  ENV: atari | football | dmlab | mujoco | gym; the rest as for run_local.sh" >&2
  exit 2
fi
IMAGE="${SEED_RL_IMAGE:-seed_rl:$IMAGE_ENV}"
LOGDIR="${SEED_RL_DOCKER_LOGDIR:-/tmp/seed_rl_docker}"

seed_rl_require_docker_engine run.sh
docker image inspect "$IMAGE" >/dev/null 2>&1 || {
  echo "run.sh: there is no image $IMAGE; build it first: docker/build.sh $IMAGE_ENV" >&2
  exit 1
}

# GPUs: an NVIDIA runtime registered with docker, or a working nvidia-smi on the host.
gpus="${SEED_RL_DOCKER_GPUS:-auto}"
if [ "$gpus" = auto ]; then
  gpus=none
  if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q nvidia ||
     { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
    gpus=all
  fi
fi

mkdir -p "$LOGDIR"
args=(run --rm --init -i
      --name "${SEED_RL_CONTAINER_NAME:-seed_rl}"
      -v "$LOGDIR:/tmp/seed_rl")
# TensorBoard's port only where it runs (a second run without it needs no free port).
if [ -z "${SEED_RL_NO_TENSORBOARD:-}" ]; then args+=(-p "${SEED_RL_TENSORBOARD_PORT:-6006}:6006"); fi
# A terminal for tmux only when there is one (otherwise run_local.sh runs in the background).
if [ -t 0 ] && [ -t 1 ]; then args+=(-t); fi
if [ "$gpus" = none ]; then
  echo "run.sh: no GPU passed to the container (set SEED_RL_DOCKER_GPUS=all to force one)" >&2
else
  args+=(--gpus "$gpus")
fi
for variable in SEED_RL_NO_TMUX SEED_RL_NO_TENSORBOARD SEED_RL_LOCAL_TRANSPORT; do
  if [ -n "${!variable:-}" ]; then args+=(-e "$variable=${!variable}"); fi
done
if [ -n "${SEED_RL_DOCKER_OPTS:-}" ]; then
  read -r -a extra_options <<< "$SEED_RL_DOCKER_OPTS"
  args+=("${extra_options[@]}")
fi

echo "run.sh: $IMAGE: ./run_local.sh $*  (logdirs in $LOGDIR, TensorBoard on http://localhost:${SEED_RL_TENSORBOARD_PORT:-6006})" >&2
exec docker "${args[@]}" "$IMAGE" ./run_local.sh "$@"
