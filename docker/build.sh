#!/usr/bin/env bash
# Builds the seed_rl image of one environment from docker/Dockerfile.ENV, tagged seed_rl:ENV.
#
#   docker/build.sh ENV [docker build options ...]
#
# ENV: atari | football | dmlab | mujoco (gym: the atari image, which also runs the gym
# environments).
# The build context is the repository root, trimmed by .dockerignore (docker/Dockerfile.ENV.dockerignore
# links to it) to what the image copies.
# Options go to `docker build`, e.g. --build-arg BASE_IMAGE=tensorflow/tensorflow:2.21.0
# (a CPU base) or --no-cache. Without a BASE_IMAGE option the Dockerfile's public default
# (tensorflow/tensorflow:2.21.0-gpu) is used where it is here or can be pulled, else the local
# base docker/local_engine.sh builds (seed_rl/base:tf2.21). BuildKit builds where the docker
# command has it (buildx), else the classic builder (DOCKER_BUILDKIT=0); DOCKER_BUILDKIT set in
# the environment wins. Environment: SEED_RL_IMAGE overrides the tag (default seed_rl:ENV).
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

# The base image: an explicit BASE_IMAGE option wins; else the public default, else the local one.
base_options=()
if [[ " $* " != *" BASE_IMAGE="* && " $* " != *"--build-arg=BASE_IMAGE="* ]]; then
  public="$(sed -n 's/^ARG BASE_IMAGE=//p' "$ROOT/docker/Dockerfile.$IMAGE_ENV")"
  if ! docker image inspect "$public" >/dev/null 2>&1 &&
     ! docker pull -q "$public" >/dev/null 2>&1; then
    docker image inspect "$SEED_RL_LOCAL_BASE_IMAGE" >/dev/null 2>&1 || {
      echo "build.sh: the base image $public cannot be pulled and there is no local base $SEED_RL_LOCAL_BASE_IMAGE:" \
           "run docker/local_engine.sh (it builds one), or pass --build-arg BASE_IMAGE=IMAGE" >&2
      exit 1
    }
    echo "build.sh: $public cannot be pulled: building on the local base $SEED_RL_LOCAL_BASE_IMAGE" >&2
    base_options=(--build-arg "BASE_IMAGE=$SEED_RL_LOCAL_BASE_IMAGE")
  fi
fi

# The builder: BuildKit where the docker command has it, else the classic one.
if [ -z "${DOCKER_BUILDKIT:-}" ]; then
  if docker buildx version >/dev/null 2>&1; then
    DOCKER_BUILDKIT=1
  else
    DOCKER_BUILDKIT=0
    echo "build.sh: docker has no BuildKit (buildx): building with the classic builder" >&2
  fi
fi
export DOCKER_BUILDKIT

echo "build.sh: building $IMAGE from docker/Dockerfile.$IMAGE_ENV" >&2
docker build -t "$IMAGE" -f "$ROOT/docker/Dockerfile.$IMAGE_ENV" "${base_options[@]}" "$@" "$ROOT"
echo "build.sh: built $IMAGE" >&2
