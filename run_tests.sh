#!/usr/bin/env bash
# Runs the test suite. On first use creates .venv and installs seed_rl with its test extra;
# later runs skip pip unless setup.py changed. Arguments go to pytest, e.g.
#   ./run_tests.sh tests/common -k vtrace
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=scripts/ensure_venv.sh
source scripts/ensure_venv.sh
seed_rl_ensure_venv test
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
exec "$SEED_RL_PYTHON" -m pytest "$@"
