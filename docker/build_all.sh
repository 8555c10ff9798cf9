#!/usr/bin/env bash
# Builds the seed_rl images one after the other with docker/build.sh and prints, per image, the
# build time and size, or the step where its build stopped. Run by hand (gfootball and
# DeepMind Lab compile for many minutes); the test suite builds only seed_rl:atari.
#
#   docker/build_all.sh [ENV ...]          (default: atari mujoco football dmlab)
#
# Each build's output goes to LOGS/ENV.log, LOGS being $SEED_RL_BUILD_LOGS (default: a new
# temporary directory, named at the end). Exit status 1 when any build failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

envs=("$@")
[ ${#envs[@]} -gt 0 ] || envs=(atari mujoco football dmlab)
LOGS="${SEED_RL_BUILD_LOGS:-$(mktemp -d -t seed_rl_builds.XXXXXX)}"
mkdir -p "$LOGS"

summary=() failed=0
for env in "${envs[@]}"; do
  log="$LOGS/$env.log"
  echo "build_all.sh: building seed_rl:$env (log: $log)" >&2
  start=$SECONDS
  if "$ROOT/docker/build.sh" "$env" >"$log" 2>&1; then
    size="$(docker image inspect -f '{{.Size}}' "seed_rl:$env" | awk '{printf "%.1f GB", $1 / 1e9}')"
    summary+=("seed_rl:$env  built in $((SECONDS - start)) s  $size")
  else
    failed=1
    step="$(grep -E '^Step [0-9]+/[0-9]+ : ' "$log" | tail -n 1 | cut -c1-120)"
    summary+=("seed_rl:$env  FAILED after $((SECONDS - start)) s at: ${step:-(no step: see the log)}")
  fi
done
printf '%s\n' "${summary[@]}"
echo "build_all.sh: the logs are in $LOGS" >&2
exit "$failed"
