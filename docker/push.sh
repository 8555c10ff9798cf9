#!/usr/bin/env bash
# Tags the image docker/build.sh made (seed_rl:ENV) with its Artifact Registry name and pushes
# it, so that Vertex AI can pull it; prints the pushed name on stdout.
#
#   docker/push.sh ENV
#
# The name is ${REGION}-docker.pkg.dev/${PROJECT_ID}/${REPOSITORY}/seed_rl:ENV unless IMAGE_URI
# gives it whole. Environment (defaults):
#   PROJECT_ID  the gcloud default project (gcloud config get-value project)
#   REGION      us-central1
#   REPOSITORY  seed-rl         (an Artifact Registry Docker repository: gcp/setup.sh makes it)
#   IMAGE_URI   the full name to push to, tag included
#   SEED_RL_IMAGE  the local image (default seed_rl:ENV)
# Docker must be allowed to push there once: gcloud auth configure-docker REGION-docker.pkg.dev
# (gcp/setup.sh does it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=docker/common.sh
source "$ROOT/docker/common.sh"

if [ $# -ne 1 ] || ! IMAGE_ENV="$(seed_rl_image_env "$1")"; then
  echo "Usage: $0 ENV   (ENV: atari | football | dmlab | mujoco | gym)" >&2
  exit 2
fi
LOCAL_IMAGE="${SEED_RL_IMAGE:-seed_rl:$IMAGE_ENV}"

if [ -z "${IMAGE_URI:-}" ]; then
  if [ -z "${PROJECT_ID:-}" ]; then
    command -v gcloud >/dev/null 2>&1 || {
      echo "push.sh: set PROJECT_ID or IMAGE_URI (gcloud, which would tell the default project, is not installed)" >&2
      exit 1
    }
    PROJECT_ID="$(gcloud config get-value project 2>/dev/null || true)"
    [ -n "$PROJECT_ID" ] || {
      echo "push.sh: no project: set PROJECT_ID or run 'gcloud config set project PROJECT_ID'" >&2
      exit 1
    }
  fi
  IMAGE_URI="${REGION:-us-central1}-docker.pkg.dev/$PROJECT_ID/${REPOSITORY:-seed-rl}/seed_rl:$IMAGE_ENV"
fi

seed_rl_require_docker_engine push.sh
docker image inspect "$LOCAL_IMAGE" >/dev/null 2>&1 || {
  echo "push.sh: there is no local image $LOCAL_IMAGE; build it first: docker/build.sh $IMAGE_ENV" >&2
  exit 1
}
echo "push.sh: pushing $LOCAL_IMAGE as $IMAGE_URI" >&2
docker tag "$LOCAL_IMAGE" "$IMAGE_URI"
docker push "$IMAGE_URI" >&2
echo "$IMAGE_URI"
