#!/usr/bin/env bash
# Builds the seed_rl image of one environment from docker/Dockerfile.ENV, tagged seed_rl:ENV.
#
#   docker/build.sh ENV [docker build options ...]
#
# ENV: atari | football | dmlab | mujoco (gym: the atari image, which also runs the gym
# environments).
# The build context is the repository root, trimmed by docker/Dockerfile.ENV.dockerignore.
# Options go to `docker build`, e.g. --build-arg BASE_IMAGE=tensorflow/tensorflow:2.21.0
# (a CPU base) or --no-cache. Environment: SEED_RL_IMAGE overrides the tag (default seed_rl:ENV).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=docker/common.sh
source "$ROOT/docker/common.sh"

if [ $# -lt 1 ] || ! IMAGE_ENV="$(seed_rl_image_env "$1")"; then
  echo "Usage: $0 ENV [docker build options ...]   (ENV: atari | football | dmlab | mujoco | gym)" >&2
  exit 2
fi
shift
IMAGE="${SEED_RL_IMAGE:-seed_rl:$IMAGE_ENV}"

seed_rl_require_docker_engine build.sh
echo "build.sh: building $IMAGE from docker/Dockerfile.$IMAGE_ENV" >&2
# BuildKit: the Dockerfiles use heredocs and cache mounts, and it reads the .dockerignore
# next to the Dockerfile.
DOCKER_BUILDKIT=1 docker build -t "$IMAGE" -f "$ROOT/docker/Dockerfile.$IMAGE_ENV" "$@" "$ROOT"
echo "build.sh: built $IMAGE" >&2
