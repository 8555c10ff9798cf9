#!/usr/bin/env bash
# Installs Google Research Football (gfootball 2.10.2) into the Python environment of PYTHON.
#
#   seed_rl/environments/football/install.sh PYTHON
#
# run_local.sh (ENV=football) and run_tests.sh call it. gfootball has no wheel for current
# Pythons and its sdist needs a C++ build, so this follows a recipe tested on this platform:
#   1. the apt packages of the engine build (skipped when all are installed);
#   2. psutil, wheel and setuptools in PYTHON's environment: the build imports psutil and an
#      isolated build would not see it, hence `--no-build-isolation`;
#   3. `pip wheel --no-build-isolation gfootball==2.10.2` into a wheel cache outside the repo
#      (a long C++ build), once per Python version; later installs, into any venv of
#      that Python, take seconds. The cached wheel's metadata asks for opencv-python-headless
#      instead of opencv-python: seed_rl already has the headless build, which gives the same
#      cv2 module, and two distributions owning one module break each other on upgrade or
#      uninstall;
#   4. the wheel with its dependencies, gym==0.25.2 (gfootball would pull gym 0.26, whose
#      reset API breaks it) and six (gfootball imports it without declaring it);
#   5. checks that gymnasium, ale_py and cv2 still work and that a football env steps.
# With gfootball 2.10.2, gym 0.25.2 and the engine importable already it only checks that.
# A failing step stops the script with the step's name and the tail of the log.
#
# Environment:
#   SEED_RL_WHEEL_CACHE   wheel cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/seed_rl/wheels)
#   SEED_RL_FOOTBALL_LOG  log of the verbose steps (default football_install.log next to the
#                         wheel cache)
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "Usage: $0 PYTHON   (the python of the environment to install gfootball into)" >&2
  exit 2
fi
PYTHON="$1"
GFOOTBALL_VERSION=2.10.2
GYM_VERSION=0.25.2
# Debian/Ubuntu packages of the engine build (about 224 packages, 500 MB on a fresh Debian 12).
APT_PACKAGES=(git cmake build-essential libgl1-mesa-dev libsdl2-dev libsdl2-image-dev
              libsdl2-ttf-dev libsdl2-gfx-dev libboost-all-dev libdirectfb-dev libst-dev
              mesa-utils xvfb x11vnc)

WHEEL_DIR="${SEED_RL_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/seed_rl/wheels}"
LOG="${SEED_RL_FOOTBALL_LOG:-$(dirname "$WHEEL_DIR")/football_install.log}"

say() { echo "football install: $*" >&2; }
fail() {
  say "FAILED at step '$1': $2"
  exit 1
}

# Exits 0 when PYTHON has gfootball $GFOOTBALL_VERSION and gym $GYM_VERSION, and gfootball.env and
# the engine import (the engine's import checks the shared libraries it links against).
installed() {
  "$PYTHON" - "$GFOOTBALL_VERSION" "$GYM_VERSION" >/dev/null 2>&1 <<'EOF'
import importlib.metadata as metadata
import sys
if metadata.version('gfootball') != sys.argv[1] or metadata.version('gym') != sys.argv[2]:
  sys.exit(1)
import gfootball.env  # noqa: F401  (its Python dependencies)
import gfootball_engine  # noqa: F401  (the compiled engine)
EOF
}

# Runs one named step with its output in $LOG; on failure names the step and shows the log tail.
step() {
  local name="$1"
  shift
  say "$name"
  echo "===== $(date '+%F %T') step '$name': $*" >> "$LOG"
  if ! "$@" >> "$LOG" 2>&1; then
    say "FAILED at step '$name'. Last lines of $LOG:"
    tail -n 40 "$LOG" >&2
    fail "$name" "see above and $LOG"
  fi
}

"$PYTHON" -c 'import sys' >/dev/null 2>&1 || fail "check python" "'$PYTHON' does not run"
installed && exit 0

mkdir -p "$WHEEL_DIR" "$(dirname "$LOG")"
# Two installs at once (run_tests.sh and run_local.sh, say) would build twice and race in pip:
# the second waits for the first, then normally finds everything installed.
exec 9> "$WHEEL_DIR/.install.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  installed && exit 0
fi
: > "$LOG"
start=$SECONDS
say "installing gfootball $GFOOTBALL_VERSION into $PYTHON (log: $LOG)"

# 1. apt packages.
missing=()
for package in "${APT_PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)"
  [[ "$status" == ii* ]] || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 ||
    fail "apt packages" "no apt-get here; install the equivalents of: ${missing[*]}"
  as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "apt packages" \
      "not root and no sudo; as root run: apt-get update && apt-get install -y ${missing[*]}"
    as_root=(sudo)
  fi
  step "apt-get update" "${as_root[@]}" apt-get update
  step "apt-get install ${#missing[@]} build packages (minutes on a fresh machine)" \
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

PIP=("$PYTHON" -m pip --disable-pip-version-check)
# 2. Build requirements, in the target environment (the build is not isolated).
step "pip install psutil wheel setuptools" "${PIP[@]}" install psutil wheel setuptools

# 3. The wheel, built once per Python version.
python_tag="$("$PYTHON" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')"
find_wheel() {
  compgen -G "$WHEEL_DIR/gfootball-$GFOOTBALL_VERSION-$python_tag-$python_tag-*.whl" |
    head -n 1 || true
}

# Rewrites the metadata of wheel $1 in place to require opencv-python-headless instead of
# opencv-python (see the header); `wheel pack` recomputes the RECORD hashes.
use_headless_opencv() {
  local wheel="$1" work
  work="$(mktemp -d)"
  "$PYTHON" -m wheel unpack -d "$work" "$wheel" &&
    sed -i 's/^Requires-Dist: opencv-python$/Requires-Dist: opencv-python-headless/' \
      "$work"/gfootball-*/gfootball-*.dist-info/METADATA &&
    mkdir "$work/out" &&
    "$PYTHON" -m wheel pack -d "$work/out" "$work"/gfootball-*/ &&
    cp "$work"/out/gfootball-*.whl "$WHEEL_DIR/.partial" &&
    mv "$WHEEL_DIR/.partial" "$WHEEL_DIR/$(basename "$wheel")"  # Atomic: never half a wheel.
  local status=$?
  rm -rf "$work"
  return $status
}

wheel="$(find_wheel)"
if [ -z "$wheel" ]; then
  build_dir="$(mktemp -d)"
  trap 'rm -rf "$build_dir"' EXIT
  # build_game_engine.sh runs `python3 -c 'import psutil'`: that must be PYTHON's environment.
  step "build the gfootball $GFOOTBALL_VERSION wheel (6-10 minutes; progress in $LOG)" \
    env PATH="$(dirname "$PYTHON"):$PATH" "${PIP[@]}" wheel -v --no-build-isolation --no-deps \
    --no-binary gfootball -w "$build_dir" "gfootball==$GFOOTBALL_VERSION"
  built="$(compgen -G "$build_dir/gfootball-$GFOOTBALL_VERSION-$python_tag-*.whl" | head -n 1 ||
           true)"
  [ -n "$built" ] || fail "build the gfootball wheel" \
    "pip made no $python_tag wheel in $build_dir: $(ls "$build_dir")"
  cp "$built" "$WHEEL_DIR/.partial"
  mv "$WHEEL_DIR/.partial" "$WHEEL_DIR/$(basename "$built")"  # Atomic: never half a wheel.
  wheel="$(find_wheel)"
else
  say "using the cached wheel $wheel"
fi
if "$PYTHON" - "$wheel" <<'EOF'
import sys
import zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
  name = next(n for n in wheel.namelist() if n.endswith('.dist-info/METADATA'))
  sys.exit(0 if 'Requires-Dist: opencv-python\n' in wheel.read(name).decode() else 1)
EOF
then
  step "make the cached wheel require opencv-python-headless" use_headless_opencv "$wheel"
fi

# 4. The wheel with its dependencies, and the gym it works with.
step "pip install $(basename "$wheel") gym==$GYM_VERSION six" \
  "${PIP[@]}" install "$wheel" "gym==$GYM_VERSION" six

# 5. The core environment still works and a football env steps.
step "check gymnasium, ale_py and cv2" "$PYTHON" -c '
import ale_py, cv2, gymnasium, numpy
gymnasium.register_envs(ale_py)
env = gymnasium.make("ALE/Pong-v5")
env.reset(seed=0)
env.step(0)
env.close()
assert cv2.resize(numpy.zeros((4, 4), numpy.uint8), (2, 2)).shape == (2, 2)'
step "check that a football env steps" "$PYTHON" -c '
import gfootball.env as football_env
env = football_env.create_environment(
    env_name="academy_empty_goal_close", representation="extracted", stacked=True)
observation = env.reset()
assert observation.shape == (72, 96, 16), observation.shape
env.step(0)
env.close()'
installed || fail "final check" "gfootball $GFOOTBALL_VERSION with gym $GYM_VERSION does not import"
say "done in $((SECONDS - start)) s"
