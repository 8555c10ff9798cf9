#!/usr/bin/env bash
# Makes a Docker engine and a TensorFlow base image on a machine that cannot reach an image
# registry (Docker Hub included), so that docker/build.sh can build the seed_rl images there.
# Each step is skipped when its result is already there:
#   1. the engine: installs Debian's docker.io and debootstrap with apt when dockerd is missing
#      (root only);
#   2. the daemon: starts dockerd in the background when `docker info` reaches none, logging to
#      $SEED_RL_DOCKERD_LOG, and says how to stop it;
#   3. a Debian image made with debootstrap and `docker import` (no registry involved);
#   4. on it the base image: Python 3 with pip and venv, this machine's CA bundle (so that pip
#      and curl inside builds trust what the host trusts, e.g. an intercepting proxy), and
#      tensorflow from the Python package index. It stands in for the Dockerfiles' public
#      default, tensorflow/tensorflow:2.21.0-gpu, through their BASE_IMAGE build argument.
# Last it prints the build argument to use on stdout, e.g.
#   docker/local_engine.sh && docker/build.sh atari --build-arg BASE_IMAGE=seed_rl/base:tf2.21
# (docker/build.sh picks this base by itself when the public one cannot be pulled.)
#
# Environment (defaults):
#   SEED_RL_BASE_IMAGE     the base image's tag (seed_rl/base:tf2.21)
#   SEED_RL_DEBIAN_IMAGE   the Debian image's tag (seed_rl/debian:bookworm)
#   SEED_RL_DEBIAN_SUITE   the Debian release (bookworm: Python 3.11)
#   SEED_RL_DEBIAN_MIRROR  where debootstrap downloads from (http://deb.debian.org/debian)
#   SEED_RL_TF_VERSION     the tensorflow release installed in the base (2.21.0)
#   SEED_RL_CA_BUNDLE      the CA bundle copied into the base (pip's cert, else the system's)
#   SEED_RL_DOCKERD_LOG    the log of a dockerd this script starts (/var/log/seed_rl_dockerd.log)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=docker/common.sh
source "$ROOT/docker/common.sh"

BASE_IMAGE="${SEED_RL_BASE_IMAGE:-$SEED_RL_LOCAL_BASE_IMAGE}"
DEBIAN_IMAGE="${SEED_RL_DEBIAN_IMAGE:-seed_rl/debian:bookworm}"
SUITE="${SEED_RL_DEBIAN_SUITE:-bookworm}"
MIRROR="${SEED_RL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TF_VERSION="${SEED_RL_TF_VERSION:-2.21.0}"
DOCKERD_LOG="${SEED_RL_DOCKERD_LOG:-/var/log/seed_rl_dockerd.log}"

say() { echo "local_engine.sh: $*" >&2; }
fail() { say "$*"; exit 1; }

# The CA bundle pip uses on this machine (PIP_CERT, pip's configured cert) or the system's.
ca_bundle() {
  local bundle="${SEED_RL_CA_BUNDLE:-${PIP_CERT:-}}"
  if [ -z "$bundle" ] && command -v pip3 >/dev/null 2>&1; then
    bundle="$(pip3 config get global.cert 2>/dev/null || true)"
  fi
  for candidate in "$bundle" /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    if [ -n "$candidate" ] && [ -s "$candidate" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}

# 1. The engine.
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1 ||
   ! command -v docker >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "dockerd, docker or debootstrap is missing and installing them needs root: run as root, or install docker.io and debootstrap."
  command -v apt-get >/dev/null 2>&1 || fail "dockerd, docker or debootstrap is missing and there is no apt-get: install a Docker engine and debootstrap."
  say "installing docker.io and debootstrap with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends docker.io debootstrap >&2
fi

# 2. The daemon.
if docker info >/dev/null 2>&1; then
  say "a Docker engine is serving ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
else
  [ "$(id -u)" = 0 ] || fail "no Docker engine is serving and starting dockerd needs root: run as root, or start the Docker daemon."
  mkdir -p "$(dirname "$DOCKERD_LOG")"
  say "starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  dockerd_pid=$!
  for _ in $(seq 120); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2>/dev/null || fail "dockerd exited at start: see $DOCKERD_LOG"
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || fail "dockerd (pid $dockerd_pid) does not answer after 60 s: see $DOCKERD_LOG"
  say "dockerd serves (pid $dockerd_pid); stop it with: kill $dockerd_pid"
fi

# 3. The Debian image, from debootstrap (no registry).
if docker image inspect "$DEBIAN_IMAGE" >/dev/null 2>&1; then
  say "$DEBIAN_IMAGE is there"
else
  [ "$(id -u)" = 0 ] || fail "debootstrap needs root to make $DEBIAN_IMAGE: run as root."
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  say "making $DEBIAN_IMAGE with debootstrap $SUITE from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >&2
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

# 4. The base image: Python, pip, the CA bundle and tensorflow.
if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  say "$BASE_IMAGE is there"
else
  bundle="$(ca_bundle)" || fail "no CA bundle found: set SEED_RL_CA_BUNDLE to the file pip should trust."
  context="$(mktemp -d)"
  trap 'rm -rf "$context"' EXIT
  cp "$bundle" "$context/ca-certificates.crt"
  cp "$ROOT/docker/local_base.Dockerfile" "$context/Dockerfile"
  say "building $BASE_IMAGE (Debian $SUITE, Python 3, tensorflow==$TF_VERSION; CA bundle $bundle)"
  DOCKER_BUILDKIT=0 docker build -q -t "$BASE_IMAGE" \
    --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" --build-arg "TF_VERSION=$TF_VERSION" \
    "$context" >/dev/null
  rm -rf "$context"
  trap - EXIT
  say "built $BASE_IMAGE"
fi

echo "--build-arg BASE_IMAGE=$BASE_IMAGE"
