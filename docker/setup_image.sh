#!/usr/bin/env bash
# The part every seed_rl image shares, run as root in docker/Dockerfile.<env> on top of the
# TensorFlow GPU base image:
#   - apt packages every image needs: tmux (run_local.sh's layout), git, curl, certificates,
#     and the headers and venv module of the image's own Python where the base image lacks them
#     (DeepMind Lab and gfootball compile against them);
#   - the virtual environment /seed_rl/.venv with access to the base image's TensorFlow
#     (--system-site-packages), so that TensorFlow is not downloaded a second time;
#   - pinned setuptools and wheel in it, for the source builds that follow.
#
#   docker/setup_image.sh [EXTRA_APT_PACKAGE ...]
#
# Being one script COPYed and RUN first by every Dockerfile, its layer is built once and shared
# by all the images built on one machine.
set -euo pipefail

VENV=/seed_rl/.venv
SETUPTOOLS_VERSION=75.8.0
WHEEL_VERSION=0.45.1

python_version="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
python_include="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
packages=(build-essential ca-certificates curl git pkg-config tmux unzip zip "$@")
[ -f "$python_include/Python.h" ] || packages+=("python${python_version}-dev")
python3 -c 'import ensurepip' 2>/dev/null || packages+=("python${python_version}-venv")

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${packages[@]}"
rm -rf /var/lib/apt/lists/*

python3 -m venv --system-site-packages "$VENV"
"$VENV/bin/pip" install --no-cache-dir "setuptools==$SETUPTOOLS_VERSION" "wheel==$WHEEL_VERSION"
"$VENV/bin/python" -c 'import tensorflow as tf; print("seed_rl image: TensorFlow", tf.__version__)'
