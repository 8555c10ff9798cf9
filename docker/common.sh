#!/usr/bin/env bash
# Sourced by docker/build.sh, docker/push.sh, docker/run.sh and run_local.sh --docker: which
# image serves an environment, and a clear error where no Docker engine can be reached.

# The base image docker/local_engine.sh builds where no registry can be reached (build.sh falls
# back to it).
export SEED_RL_LOCAL_BASE_IMAGE=seed_rl/base:tf2.21

# Prints the image flavour (the X of docker/Dockerfile.X and of the tag seed_rl:X) for ENV:
# atari, football, dmlab and mujoco have their own image; the gym environments run in the atari
# image (seed_rl's core dependencies are all they need). Returns 1 for any other ENV.
seed_rl_image_env() {
  case "$1" in
    atari|football|dmlab|mujoco) echo "$1";;
    gym) echo atari;;
    *) return 1;;
  esac
}

# Exits (status 1, message on stderr, prefixed by $1) unless the docker command exists and
# `docker info` reaches an engine within 30 s.
seed_rl_require_docker_engine() {
  local who="$1" error
  if ! command -v docker >/dev/null 2>&1; then
    echo "$who: the docker command is not installed, so no Docker engine is reachable." >&2
    echo "$who: install Docker (https://docs.docker.com/engine/install/), or run without Docker." >&2
    exit 1
  fi
  local probe=(docker info --format '{{.ServerVersion}}')
  if command -v timeout >/dev/null 2>&1; then probe=(timeout 30 "${probe[@]}"); fi
  if ! error="$("${probe[@]}" 2>&1 >/dev/null)"; then
    echo "$who: no Docker engine is reachable: 'docker info' failed${error:+: $(printf '%s' "$error" | tail -n 1)}" >&2
    echo "$who: start the Docker daemon (or set DOCKER_HOST / the docker context), or run without Docker." >&2
    exit 1
  fi
}
