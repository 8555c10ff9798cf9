#!/usr/bin/env bash
# Runs a SEED RL experiment on this machine: one learner, NUM_ACTORS actors and TensorBoard.
#
#   ./run_local.sh [--docker] ENV AGENT NUM_ACTORS [ENV_BATCH_SIZE] [--flag=value ...]
#
# ENV: atari | football | dmlab | gym | mujoco;  AGENT: vtrace | r2d2 | sac.
# The first run creates .venv and installs what ENV needs. With tmux and an interactive
# terminal the processes run in a tmux session "seed_rl" (the original's layout); otherwise
# they run in the background, one log per process under LOGDIR/logs, with a progress line
# here. Ctrl-C or ./stop_local.sh stops everything (the learner checkpoints first).
# With --docker it builds the image of ENV (docker/build.sh) and runs all that inside a
# container (docker/run.sh) instead, where a Docker engine is reachable.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$ROOT"

usage() {
  cat >&2 <<EOF
Usage: $0 [--docker] ENV AGENT NUM_ACTORS [ENV_BATCH_SIZE] [--flag=value ...]
  --docker        build the image of ENV and run in a container (needs a Docker engine)
  ENV             atari | football | dmlab | gym | mujoco
  AGENT           vtrace | r2d2 | sac
  NUM_ACTORS      number of actor processes (an integer, no leading zeros)
  ENV_BATCH_SIZE  environments per actor (default 1)
  --flag=value    passed to the learner and every actor, e.g. --env_name=CartPole-v1
Environment: SEED_RL_NO_TMUX=1 forces background mode; SEED_RL_NO_TENSORBOARD=1 skips
TensorBoard.
Examples:
  $0 gym vtrace 2 --env_name=CartPole-v1
  $0 atari vtrace 4
  $0 atari r2d2 4 4
  $0 mujoco vtrace 4 --env_name=Hopper-v5
  $0 --docker football vtrace 4
EOF
  exit 1
}

die() { echo "run_local.sh: $*" >&2; exit 1; }

DOCKER=0
if [ "${1:-}" = --docker ]; then DOCKER=1; shift; fi
[ $# -ge 3 ] || usage
ENVIRONMENT="$1"; AGENT="$2"; NUM_ACTORS="$3"; shift 3
ENV_BATCH_SIZE=1
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then ENV_BATCH_SIZE="$1"; shift; fi
EXTRA_FLAGS=("$@")

[[ "$ENVIRONMENT" =~ ^(atari|football|dmlab|gym|mujoco)$ ]] || {
  echo "run_local.sh: unknown ENV '$ENVIRONMENT'" >&2; usage; }
[[ "$AGENT" =~ ^(vtrace|r2d2|sac)$ ]] || { echo "run_local.sh: unknown AGENT '$AGENT'" >&2; usage; }
[[ "$NUM_ACTORS" =~ ^(0|[1-9][0-9]*)$ ]] || {
  echo "run_local.sh: NUM_ACTORS must be a non-negative integer, got '$NUM_ACTORS'" >&2; usage; }
[[ "$ENV_BATCH_SIZE" =~ ^[1-9][0-9]*$ ]] || {
  echo "run_local.sh: ENV_BATCH_SIZE must be a positive integer, got '$ENV_BATCH_SIZE'" >&2; usage; }
for flag in "${EXTRA_FLAGS[@]}"; do
  [[ "$flag" == --* ]] || die "extra arguments must be --flag=value, got '$flag'"
  case "$flag" in
    --num_envs=*|--env_batch_size=*|--task=*|--run_mode=*)
      die "$flag is set by run_local.sh from NUM_ACTORS and ENV_BATCH_SIZE";;
  esac
done

MAIN="seed_rl/environments/$ENVIRONMENT/${AGENT}_main.py"
if [ ! -f "$MAIN" ]; then
  die "$ENVIRONMENT $AGENT is not available yet ($MAIN does not exist); see the status table in README.md"
fi

if [ "$DOCKER" = 1 ]; then
  # The image holds the environment and its venv: nothing is installed on this machine.
  # shellcheck source=docker/common.sh
  source docker/common.sh
  seed_rl_require_docker_engine run_local.sh
  "$ROOT/docker/build.sh" "$ENVIRONMENT"
  exec "$ROOT/docker/run.sh" "$ENVIRONMENT" "$AGENT" "$NUM_ACTORS" "$ENV_BATCH_SIZE" \
    "${EXTRA_FLAGS[@]}"
fi

# shellcheck source=scripts/ensure_venv.sh
source scripts/ensure_venv.sh
case "$ENVIRONMENT" in
  football)
    seed_rl_ensure_venv ""
    "$ROOT/seed_rl/environments/football/install.sh" "$SEED_RL_PYTHON";;
  dmlab)
    # DeepMind Lab has no pip wheel. Check for it before creating or updating the venv (a first
    # install takes minutes) with the venv's Python, or python3 where there is no venv yet, and
    # again with the venv's Python once it exists.
    check_dmlab() {
      local error
      error="$("$1" -c 'import deepmind_lab' 2>&1 >/dev/null)" && return 0
      die "DeepMind Lab (Python module deepmind_lab) cannot be imported by $1 \
($(printf '%s' "$error" | tail -n 1)).
DeepMind Lab has no pip wheel; it is built from source with Bazel. The Docker image
docker/Dockerfile.dmlab does that and runs seed_rl with it:
  docker build -f docker/Dockerfile.dmlab -t seed_rl:dmlab .
  docker run --gpus all -it --rm seed_rl:dmlab ./run_local.sh dmlab vtrace 4
If another Python has it, make .venv from that Python with access to its packages:
  /path/to/that/python3 -m venv --system-site-packages --clear .venv"
    }
    dmlab_python="${SEED_RL_VENV:-$ROOT/.venv}/bin/python"
    [ -x "$dmlab_python" ] || dmlab_python="${PYTHON:-python3}"
    check_dmlab "$dmlab_python"
    seed_rl_ensure_venv ""
    check_dmlab "$SEED_RL_PYTHON"
    ;;
  *) seed_rl_ensure_venv "$(seed_rl_env_extras "$ENVIRONMENT")";;  # mujoco: the mujoco extra
esac
PY="$SEED_RL_PYTHON"
VENV_BIN="$(dirname "$PY")"

NUM_ENVS=$((NUM_ACTORS * ENV_BATCH_SIZE))
LOGDIR="/tmp/seed_rl/${ENVIRONMENT}_${AGENT}"
for flag in "${EXTRA_FLAGS[@]}"; do
  case "$flag" in --logdir=*|--job-dir=*) LOGDIR="${flag#*=}";; esac
done
mkdir -p "$LOGDIR/logs"
# The logs of an earlier run in this logdir are kept: moved to logs/<when they were written>/.
if compgen -G "$LOGDIR/logs/*.log" >/dev/null; then
  last_log="$LOGDIR/logs/learner.log"
  [ -f "$last_log" ] || last_log="$(compgen -G "$LOGDIR/logs/*.log" | head -n 1)"
  previous="$LOGDIR/logs/$(date -r "$last_log" +%Y%m%d-%H%M%S)"
  mkdir -p "$previous"
  mv "$LOGDIR"/logs/*.log "$previous/"
  echo "seed_rl: the previous run's logs are in $previous"
fi
MODULE="seed_rl.environments.$ENVIRONMENT.${AGENT}_main"
COMMON=(--logdir="$LOGDIR" --num_envs="$NUM_ENVS" --env_batch_size="$ENV_BATCH_SIZE"
        "${EXTRA_FLAGS[@]}")
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
export PYTHONUNBUFFERED=1

learner_cmd=("$PY" -m "$MODULE" --run_mode=learner --logtostderr "${COMMON[@]}")
# Sets ACTOR_CMD to the command of actor $1 (actors never use a GPU).
actor_cmd() { ACTOR_CMD=(env CUDA_VISIBLE_DEVICES= "$PY" -m "$MODULE" --run_mode=actor --logtostderr
                         --task="$1" "${COMMON[@]}"); }
tensorboard_cmd=("$VENV_BIN/tensorboard" --logdir "$LOGDIR" --port 6006)
# In a container TensorBoard must listen on every interface to be reachable through the
# published port (the images set SEED_RL_TENSORBOARD_HOST=0.0.0.0).
if [ -n "${SEED_RL_TENSORBOARD_HOST:-}" ]; then
  tensorboard_cmd+=(--host "$SEED_RL_TENSORBOARD_HOST")
fi

echo "seed_rl: $ENVIRONMENT $AGENT, $NUM_ACTORS actor(s) x $ENV_BATCH_SIZE env(s); logdir $LOGDIR"
echo "seed_rl: a checkpoint in the logdir is resumed; delete $LOGDIR to start afresh."

if [ -z "${SEED_RL_NO_TMUX:-}" ] && command -v tmux >/dev/null 2>&1 && [ -t 0 ] && [ -t 1 ]; then
  q() { printf '%q ' "$@"; }
  tmux kill-session -t seed_rl 2>/dev/null || true
  tmux new-session -d -s seed_rl -n main
  tmux send-keys -t seed_rl:main "alias stop_seed='$ROOT/stop_local.sh seed_rl'; clear; \
echo 'SEED RL: switch windows with CTRL+b then the window number; stop with stop_seed'" Enter
  tmux send-keys -t seed_rl:main "stop_seed"
  tmux new-window -d -t seed_rl -n learner
  tmux send-keys -t seed_rl:learner "$(q "${learner_cmd[@]}")" Enter
  for ((i = 0; i < NUM_ACTORS; i++)); do
    tmux new-window -d -t seed_rl -n "actor_$i"
    actor_cmd "$i"
    tmux send-keys -t "seed_rl:actor_$i" "$(q "${ACTOR_CMD[@]}")" Enter
  done
  tmux new-window -d -t seed_rl -n tensorboard
  tmux send-keys -t seed_rl:tensorboard "$(q "${tensorboard_cmd[@]}")" Enter
  exec tmux attach -t seed_rl
fi

# Background mode: one log per process, a progress line here, everything stopped on exit.
# stop_local.sh finds every background run through these pid files.
mkdir -p /tmp/seed_rl
PIDFILE="/tmp/seed_rl/run_local.$$.pids"
: > "$PIDFILE"
"${learner_cmd[@]}" > "$LOGDIR/logs/learner.log" 2>&1 &
LEARNER_PID=$!
echo "learner $LEARNER_PID" >> "$PIDFILE"
ACTOR_PIDS=()
for ((i = 0; i < NUM_ACTORS; i++)); do
  actor_cmd "$i"
  "${ACTOR_CMD[@]}" > "$LOGDIR/logs/actor_$i.log" 2>&1 &
  ACTOR_PIDS+=($!)
  echo "actor_$i $!" >> "$PIDFILE"
done
if [ -z "${SEED_RL_NO_TENSORBOARD:-}" ] && [ -x "$VENV_BIN/tensorboard" ]; then
  "${tensorboard_cmd[@]}" > "$LOGDIR/logs/tensorboard.log" 2>&1 &
  echo "tensorboard $!" >> "$PIDFILE"
fi
echo "seed_rl: logs in $LOGDIR/logs; TensorBoard on http://localhost:6006; stop with Ctrl-C or ./stop_local.sh"

stopping=0
stop_all() {
  [ "$stopping" = 0 ] || return 0
  stopping=1
  # Ignored from here on, also by stop_local.sh (it inherits that): another Ctrl-C while
  # stopping would otherwise kill both and leave the actors running.
  trap '' INT TERM
  echo
  echo "seed_rl: stopping (the learner writes a checkpoint first; at most about 70 s)"
  "$ROOT/stop_local.sh" --pidfile "$PIDFILE" >/dev/null 2>&1 || true
}
trap 'stop_all; exit 130' INT TERM

"$PY" -m seed_rl.common.progress_monitor --log "$LOGDIR/logs/learner.log" \
  --pid "$LEARNER_PID" &
MONITOR_PID=$!

set +e
wait "$LEARNER_PID"
LEARNER_STATUS=$?
set -e
kill "$MONITOR_PID" 2>/dev/null || true
stop_all
if [ "$LEARNER_STATUS" -ne 0 ]; then
  echo "seed_rl: the learner exited with status $LEARNER_STATUS; last lines of its log:" >&2
  tail -n 20 "$LOGDIR/logs/learner.log" >&2
  exit "$LEARNER_STATUS"
fi
echo "seed_rl: training finished"
