#!/usr/bin/env bash
# The checks to run on a machine with an NVIDIA GPU (none was ever lent to this project's
# development machine, so their figures are still to be measured):
#
#   bench/gpu_checks.sh [SECONDS]     (SECONDS per end-to-end measurement, default 30)
#
#   1. the multi-device learner path on real GPUs: the gym V-trace learner with the first GPU
#      split into two logical GPUs (bench/two_device_learner.py) trains CartPole-v1 for 20,000
#      frames with one actor; it must say it uses 2 (or more) GPU devices and finish;
#   2. XLA (jit_compile) against the default for inference and training, nature and impala
#      (bench/jit_compile.py);
#   3. the end-to-end Atari bench with the GPU learner, nature and impala networks, V-trace and
#      R2D2, with the cores but two as actors of 8 envs (bench/end_to_end.py).
#
# It uses the checkout's .venv (created on first use, as run_local.sh does) or, in a Docker
# image of this project, the image's. TensorFlow must see the GPU: `pip install
# 'tensorflow[and-cuda]>=2.21,<2.22'` in the venv, or the images (tensorflow:2.21.0-gpu based).
# Each part's output goes to the terminal and to gpu_checks/<part>.log.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SECONDS_PER_RUN="${1:-30}"
# shellcheck source=scripts/ensure_venv.sh
source scripts/ensure_venv.sh
seed_rl_ensure_venv ""
PY="$SEED_RL_PYTHON"
if ! "$PY" -c "import sys, tensorflow as tf; sys.exit(not tf.config.list_physical_devices('GPU'))" \
    2>/dev/null; then
  echo "gpu_checks: TensorFlow ($PY) sees no GPU; install tensorflow[and-cuda] into the venv" \
       "or run inside this project's Docker image with --gpus all" >&2
  exit 1
fi
OUT="$ROOT/gpu_checks"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpus.log"

echo "== 1. two logical GPUs: MirroredStrategy, one inference function per device"
RUN="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$RUN"' EXIT
FLAGS=(--server_address="unix:$RUN/learner.sock" --logdir="$RUN/logdir" --num_envs=4
       --env_batch_size=4 --inference_batch_size=4 --unroll_length=20 --batch_size=4
       --total_environment_frames=20000 --env_name=CartPole-v1)
"$PY" -m bench.two_device_learner --run_mode=learner "${FLAGS[@]}" > "$OUT/two_gpus.log" 2>&1 &
LEARNER=$!
"$PY" -m seed_rl.environments.gym.vtrace_main --run_mode=actor --task=0 "${FLAGS[@]}" \
    > "$OUT/two_gpus_actor.log" 2>&1 &
ACTOR=$!
if ! timeout 600 tail --pid="$LEARNER" -f /dev/null || ! wait "$LEARNER"; then
  echo "gpu_checks: the two-GPU learner failed or ran past 10 minutes; see $OUT/two_gpus.log" >&2
  exit 1
fi
kill "$ACTOR" 2>/dev/null || true
for line in "Learner uses [2-9][0-9]* GPU device" "Training finished"; do
  grep -E "$line" "$OUT/two_gpus.log" ||
    { echo "gpu_checks: no '$line' in $OUT/two_gpus.log" >&2; exit 1; }
done

echo "== 2. XLA against the default, on the GPU"
for network in nature impala; do
  "$PY" -m bench.jit_compile --network "$network" 2>&1 | tee "$OUT/jit_compile_$network.log"
done

echo "== 3. end to end with the GPU learner"
ACTORS=$(( $(nproc) > 4 ? $(nproc) - 2 : 2 ))
for agent in vtrace r2d2; do
  for network in nature impala; do
    "$PY" -m bench.end_to_end --agent "$agent" --network "$network" --num_actors "$ACTORS" \
        --env_batch_size 8 --seconds "$SECONDS_PER_RUN" 2>&1 \
        | tee "$OUT/end_to_end_${agent}_${network}.log"
  done
done
echo "gpu_checks: all done; logs in $OUT"
