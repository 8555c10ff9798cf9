#!/usr/bin/env bash
# Runs the test suite. On first use creates .venv and installs seed_rl with its test extra (which
# includes the mujoco extra) and gfootball (SEED_RL_SKIP_FOOTBALL=1: without gfootball, its tests
# skip); later runs skip pip unless setup.py changed. Arguments go to pytest, e.g.
#   ./run_tests.sh tests/common -k vtrace
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=scripts/ensure_venv.sh
source scripts/ensure_venv.sh
seed_rl_ensure_venv test
# The Google Research Football tests need gfootball, built from source on first use (6-10
# minutes, then a no-op of about a second). SEED_RL_SKIP_FOOTBALL=1 skips the build and those
# tests; without it a failed install stops here, so football tests never skip silently.
case "${SEED_RL_SKIP_FOOTBALL:-}" in
  ''|0)
    seed_rl/environments/football/install.sh "$SEED_RL_PYTHON" || {
      echo "seed_rl: installing gfootball failed (see above); SEED_RL_SKIP_FOOTBALL=1 runs" \
           "the other tests without it" >&2
      exit 1
    };;
  *) echo "seed_rl: SEED_RL_SKIP_FOOTBALL is set: gfootball is not installed, its tests skip" >&2;;
esac
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
exec "$SEED_RL_PYTHON" -m pytest "$@"
