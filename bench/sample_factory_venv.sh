#!/usr/bin/env bash
# Creates (on first use) the virtual environment of Sample Factory 2.1.1 that
# bench/sample_factory_side_by_side.py runs, apart from the project's .venv: Sample Factory needs
# numpy < 2 and gymnasium < 1, seed_rl numpy 2 and gymnasium 1. Prints the venv's python.
#
#   bench/sample_factory_venv.sh            (venv in .venv-sample-factory at the repository root)
#   SAMPLE_FACTORY_VENV=/path bench/sample_factory_venv.sh
#
# torch is pinned to the CPU build, `torch==2.13.0+cpu` (plain `torch` from the default index on
# Linux brings CUDA's several GB of libraries); pip takes it from a wheel on the machine (its
# find-links) or from an index given in PIP_EXTRA_INDEX_URL, and stops if neither has it. ale-py
# is seed_rl's version (setup.py), so both sides run the same emulator, and ships the ROMs
# (Sample Factory's own `atari` extra would pull AutoROM, which downloads them at install);
# gymnasium is the last release Sample Factory accepts (< 1). pip runs until an install with
# these requirements and this Python has succeeded (the stamp file holds their hash); later calls
# cost well under a second.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${SAMPLE_FACTORY_VENV:-$ROOT/.venv-sample-factory}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS=(
  'sample-factory==2.1.1'
  'torch==2.13.0+cpu'
  'gymnasium==0.29.1'
  'ale-py==0.12.1'
  'numpy<2'
)
hash="$(printf '%s\n' "${REQUIREMENTS[@]}" "$("$PYTHON" -V 2>&1)" | sha256sum | cut -d' ' -f1)"
stamp="$VENV/.sample_factory_installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$hash" ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    echo "sample_factory_venv: creating $VENV" >&2
    "$PYTHON" -m venv "$VENV"
  fi
  echo "sample_factory_venv: installing ${REQUIREMENTS[*]} into $VENV (a few minutes)" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q "${REQUIREMENTS[@]}" >&2 || {
    echo "sample_factory_venv: pip failed; without a torch 2.13.0+cpu wheel on this machine," \
         "set PIP_EXTRA_INDEX_URL to an index of PyTorch's CPU wheels" >&2
    exit 1
  }
  echo "$hash" > "$stamp"
fi
echo "$VENV/bin/python"
