#!/usr/bin/env bash
# Sourced by run_tests.sh and run_local.sh: makes sure .venv exists and holds seed_rl (editable)
# with the requested extras. pip runs only when no successful install since setup.py, the
# package's version or the Python last changed provides those extras, so a second call costs well
# under a second. An install provides the extras it asked for and every extra whose requirements
# it installed too: after `.[test]` (run_tests.sh) a run that asks for the core or for `mujoco`
# (run_local.sh) installs nothing.
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

# The stamp (.seed_rl_installed in the venv) holds one line per successful install:
# "HASH extras=EXTRA,EXTRA...": HASH of setup.py, the `__version__` line of seed_rl/__init__.py
# (setup.py reads the version there; the editable install's metadata keeps the version it was
# installed with) and the Python, then the extras that install provides. A change to any of them
# changes HASH, so the lines of older installs stop counting.

# Does the stamp $1 record installs with hash $2 that provide each of the extras $3
# (comma-separated; "" for the core alone, which any install provides)?
seed_rl_stamp_provides() {
  local stamp="$1" hash="$2" line_hash line_extras provided="," found=0 extra wanted=()
  [ -f "$stamp" ] || return 1
  while read -r line_hash line_extras; do
    [ "$line_hash" = "$hash" ] || continue
    found=1
    provided+="${line_extras#extras=},"
  done < "$stamp"
  [ "$found" = 1 ] || return 1
  IFS=',' read -r -a wanted <<< "$3"
  for extra in "${wanted[@]}"; do
    [ -z "$extra" ] || [[ "$provided" == *",$extra,"* ]] || return 1
  done
}

# Prints (comma-separated) the extras that the install of the extras $2 into the venv of the
# Python $1 provides: those asked for, and every extra of seed_rl whose requirements (its
# installed metadata, written from setup.py by that install) are all among theirs. Where the
# metadata cannot be read, the extras asked for alone.
seed_rl_extras_provided() {
  "$1" - "$2" <<'EOF' 2>/dev/null || echo "$2"
import importlib.metadata
import re
import sys

metadata = importlib.metadata.metadata('seed_rl')
requirements = {extra: set() for extra in metadata.get_all('Provides-Extra') or []}
for line in metadata.get_all('Requires-Dist') or []:
  requirement, _, marker = line.partition(';')
  extra = re.search(r'extra == "([^"]+)"', marker)
  if extra:
    rest = marker.replace(extra.group(0), '').strip()
    requirements.setdefault(extra.group(1), set()).add((requirement.strip(), rest))
asked = [extra for extra in sys.argv[1].split(',') if extra]
installed = set().union(*(requirements.get(extra, set()) for extra in asked))
provided = set(asked) | {extra for extra, needs in requirements.items() if needs <= installed}
print(','.join(sorted(provided)))
EOF
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
  local install_hash
  install_hash="$( {
    cat "$root/setup.py"
    grep -m1 '^__version__ = ' "$root/seed_rl/__init__.py" || true
    "$venv/bin/python" -V
  } | sha256sum | cut -d' ' -f1)"
  if ! seed_rl_stamp_provides "$stamp" "$install_hash" "$extras"; then
    # One install at a time: two runs started together would otherwise run pip at once in the
    # same venv and break it. The second one waits, then finds the stamp written.
    local lock_fd=""
    if command -v flock >/dev/null 2>&1 && exec {lock_fd}>>"$venv/.seed_rl_install.lock"; then
      flock "$lock_fd"
    fi
    if ! seed_rl_stamp_provides "$stamp" "$install_hash" "$extras"; then
      echo "seed_rl: installing $spec into $venv (first run takes a few minutes)" >&2
      (cd "$root" &&
         "$venv/bin/python" -m pip install --disable-pip-version-check -q -e "$spec") || {
        echo "seed_rl: pip install of $spec failed; see the messages above" >&2
        if [ -n "$lock_fd" ]; then exec {lock_fd}>&-; fi
        return 1
      }
      echo "$install_hash extras=$(seed_rl_extras_provided "$venv/bin/python" "$extras")" \
        >> "$stamp"
    fi
    if [ -n "$lock_fd" ]; then exec {lock_fd}>&-; fi
  fi
  SEED_RL_PYTHON="$venv/bin/python"
  export SEED_RL_PYTHON
}
