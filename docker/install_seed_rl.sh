#!/usr/bin/env bash
# Installs seed_rl into the image's virtual environment, in two steps that docker/Dockerfile.<env>
# runs as separate layers, so that a change to the code does not reinstall every dependency:
#
#   docker/install_seed_rl.sh deps DIR [EXTRAS]
#                                          DIR holds only setup.py, README.md and
#                                          seed_rl/__init__.py (the version): installs
#                                          seed_rl's dependencies, and those of the setup.py
#                                          EXTRAS (e.g. mujoco) when given (the project
#                                          itself, empty without its sources, is removed
#                                          again);
#   docker/install_seed_rl.sh package ENV  run in /seed_rl once the sources are there: the
#                                          editable install run_local.sh would do, with the
#                                          extras of ENV (it leaves the stamp that lets
#                                          run_local.sh start at once), then imports every
#                                          entry point of ENV and checks that gcp/run.py, the
#                                          Vertex AI entrypoint, is there.
set -euo pipefail

usage() {
  echo "Usage: $0 deps DIR [EXTRAS] | package ENV" >&2
  exit 2
}
[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$1" = deps ]; } || usage

case "$1" in
  deps)
    pip install "$2${3:+[$3]}"
    pip uninstall -y seed_rl
    ;;
  package)
    cd /seed_rl
    # shellcheck source=scripts/ensure_venv.sh
    . scripts/ensure_venv.sh
    seed_rl_ensure_venv "$(seed_rl_env_extras "$2")"
    test -f gcp/run.py
    found=0
    for main in seed_rl/environments/"$2"/*_main.py; do
      [ -f "$main" ] || continue
      module="${main%.py}"
      module="${module//\//.}"
      echo "seed_rl image: importing $module"
      "$SEED_RL_PYTHON" -c "import $module"
      found=1
    done
    if [ "$found" = 0 ]; then
      echo "$0: no entry point seed_rl/environments/$2/*_main.py" >&2
      exit 1
    fi
    ;;
  *) usage;;
esac
