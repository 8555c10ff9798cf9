#!/usr/bin/env bash
# Sourced by run_tests.sh and run_local.sh: makes sure .venv exists and holds seed_rl (editable)
# with the requested extras. pip runs only when setup.py, the extras or the Python changed since
# the last successful install, so a second call costs well under a second.
#
# Usage: source scripts/ensure_venv.sh; seed_rl_ensure_venv EXTRA[,EXTRA...]   (e.g. "test" or
# "" for the core only). Sets SEED_RL_PYTHON to the venv's python.
#        seed_rl_env_extras ENV   prints the extras an environment needs ("" for none).

# The setup.py extras of an environment's entry points, the one place that knows them (for
# run_local.sh and the Docker images, docker/install_seed_rl.sh). Football and DeepMind Lab are
# installed by their own recipes (seed_rl/environments/football/install.sh,
# docker/Dockerfile.dmlab), not by pip extras.
seed_rl_env_extras() {
  case "$1" in
    mujoco) echo mujoco;;
    *) echo "";;
  esac
}

seed_rl_ensure_venv() {
  local extras="$1"
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local venv="${SEED_RL_VENV:-$root/.venv}"
  local python="${PYTHON:-python3}"

  if ! command -v "$python" >/dev/null 2>&1; then
    echo "seed_rl: '$python' not found; install Python 3.10+ or set PYTHON=/path/to/python3" >&2
    return 1
  fi
  if [ ! -x "$venv/bin/python" ]; then
    echo "seed_rl: creating virtual environment in $venv" >&2
    "$python" -m venv "$venv" || {
      echo "seed_rl: could not create $venv (on Debian: apt-get install python3-venv)" >&2
      return 1
    }
  fi

  local spec=".[${extras}]"
  [ -n "$extras" ] || spec="."
  local stamp="$venv/.seed_rl_installed"
  local wanted
  wanted="$( { cat "$root/setup.py"; echo "extras=$extras"; "$venv/bin/python" -V; } \
             | sha256sum | cut -d' ' -f1)"
  # The stamp holds one line per (setup.py, extras, python) installed; a changed setup.py
  # changes every hash, so old lines simply stop matching.
  if [ ! -f "$stamp" ] || ! grep -qx "$wanted" "$stamp"; then
    # One install at a time: two runs started together would otherwise run pip at once in the
    # same venv and break it. The second one waits, then finds the stamp written.
    local lock_fd=""
    if command -v flock >/dev/null 2>&1 && exec {lock_fd}>>"$venv/.seed_rl_install.lock"; then
      flock "$lock_fd"
    fi
    if [ ! -f "$stamp" ] || ! grep -qx "$wanted" "$stamp"; then
      echo "seed_rl: installing $spec into $venv (first run takes a few minutes)" >&2
      (cd "$root" &&
         "$venv/bin/python" -m pip install --disable-pip-version-check -q -e "$spec") || {
        echo "seed_rl: pip install of $spec failed; see the messages above" >&2
        if [ -n "$lock_fd" ]; then exec {lock_fd}>&-; fi
        return 1
      }
      echo "$wanted" >> "$stamp"
    fi
    if [ -n "$lock_fd" ]; then exec {lock_fd}>&-; fi
  fi
  SEED_RL_PYTHON="$venv/bin/python"
  export SEED_RL_PYTHON
}
