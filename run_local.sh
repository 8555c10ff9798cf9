#!/usr/bin/env bash
# Runs a SEED RL experiment on this machine: one learner, NUM_ACTORS actors and TensorBoard.
#
#   ./run_local.sh [--docker] ENV AGENT NUM_ACTORS [ENV_BATCH_SIZE] [--flag=value ...]
#
# ENV: atari | football | dmlab | gym | mujoco;  AGENT: vtrace | r2d2 | sac | ppo.
# The first run creates .venv and installs what ENV needs. The flags are checked against the
# entry point (seed_rl/launch/flag_check.py) before anything starts. The run then takes its
# logdir (LOGDIR/run_local.lock), its learner address and a TensorBoard port, or refuses in one
# line when another live run holds one (seed_rl/launch/local_run.py). Without --server_address
# the learner serves the entry point's default gRPC address (localhost:8686), for actors started
# elsewhere or by hand, and a shared-memory address of the run's own (shm:<logdir's name>_<hash>),
# through which this script's actors talk to it (docs/deployment.md, "Transports");
# SEED_RL_LOCAL_TRANSPORT=grpc gives them the gRPC address instead. With --server_address (one
# address or a comma-separated list) the learner serves it and the actors are given it (an actor
# given a list uses its first shm: address, else its first). Each process writes its
# log under LOGDIR/logs (learner.log, actor_N.log, tensorboard.log). With tmux and an
# interactive terminal the processes run in a tmux session of their own (seed_rl_<logdir's
# name>_<hash>; the original's layout), one window each that shows its output as it goes to its
# log, after the windows main and progress (the progress line); otherwise they run in the
# background, with the progress line here and, when the learner is done, the commands that
# evaluate its policy, plot its learning curve and show its summaries. A logdir with a
# checkpoint is resumed from it (and says so). Ctrl-C, ./stop_local.sh (the runs of this
# checkout) or ./stop_local.sh --logdir=LOGDIR stops the run (the learner checkpoints first).
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
  AGENT           vtrace | r2d2 | sac | ppo
  NUM_ACTORS      number of actor processes (at least 1, no leading zeros)
  ENV_BATCH_SIZE  environments per actor (default 1)
  --flag=value    passed to the learner and every actor, e.g. --env_name=CartPole-v1;
                  --logdir=DIR and --server_address=HOST:PORT keep a second run apart
Environment: SEED_RL_NO_TMUX=1 forces background mode; SEED_RL_NO_TENSORBOARD=1 skips
TensorBoard; SEED_RL_TENSORBOARD_PORT=PORT sets its port (default: 6006 or the next free one);
SEED_RL_LOCAL_TRANSPORT=grpc makes the actors use the learner's gRPC address instead of shared
memory (default shm; only without --server_address, which the actors otherwise get).
Examples:
  $0 gym vtrace 2 --env_name=CartPole-v1
  $0 atari vtrace 4
  $0 atari r2d2 4 4
  $0 mujoco vtrace 4 --env_name=Hopper-v5
  $0 mujoco ppo 4 8
  $0 gym ppo 2
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
[[ "$AGENT" =~ ^(vtrace|r2d2|sac|ppo)$ ]] || { echo "run_local.sh: unknown AGENT '$AGENT'" >&2; usage; }
[[ "$NUM_ACTORS" =~ ^[1-9][0-9]*$ ]] || {
  echo "run_local.sh: NUM_ACTORS must be a positive integer (at least one actor), got" \
       "'$NUM_ACTORS'" >&2; usage; }
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
  die "$ENVIRONMENT $AGENT is not available yet ($MAIN does not exist); see the table of entry points in README.md"
fi

NUM_ENVS=$((NUM_ACTORS * ENV_BATCH_SIZE))
LOGDIR="/tmp/seed_rl/${ENVIRONMENT}_${AGENT}"
MODULE="seed_rl.environments.$ENVIRONMENT.${AGENT}_main"
COMMON=(--logdir="$LOGDIR" --num_envs="$NUM_ENVS" --env_batch_size="$ENV_BATCH_SIZE"
        "${EXTRA_FLAGS[@]}")
# Checks the flags with the entry point's own (absl) definitions and the learner's checks of
# its batch sizes, in about a second: one line and exit status 2 for bad flags. Sets LOGDIR and
# ADDRESS to the learner's --logdir and --server_address, ADDRESS_GIVEN to 1 when
# --server_address was given (on the command line or in a flag file), else 0. $1: the Python.
check_flags() {
  local checked status key value
  checked="$("$1" -m seed_rl.launch.flag_check --prefix=run_local.sh \
               --shape="NUM_ACTORS x ENV_BATCH_SIZE = $NUM_ACTORS x $ENV_BATCH_SIZE" \
               --print=logdir,server_address --print_given=server_address "$MODULE" \
               --run_mode=learner --logtostderr "${COMMON[@]}")" || { status=$?; return "$status"; }
  while IFS='=' read -r key value; do
    case "$key" in
      logdir) LOGDIR="$value";;
      server_address) ADDRESS="$value";;
      given_server_address) ADDRESS_GIVEN="$value";;
    esac
  done <<< "$checked"
}
LOCAL_TRANSPORT="${SEED_RL_LOCAL_TRANSPORT:-shm}"
[[ "$LOCAL_TRANSPORT" =~ ^(shm|grpc)$ ]] ||
  die "SEED_RL_LOCAL_TRANSPORT must be shm (the actors use shared memory) or grpc, got" \
      "'$LOCAL_TRANSPORT'"

if [ "$DOCKER" = 1 ]; then
  # The image holds the environment and its venv: nothing is installed on this machine. Where
  # this checkout has a venv already, the flags are checked before the image is built (status
  # 3: that venv cannot import the entry point; the container checks them again).
  if [ -x "${SEED_RL_VENV:-$ROOT/.venv}/bin/python" ]; then
    status=0
    message="$(check_flags "${SEED_RL_VENV:-$ROOT/.venv}/bin/python" 2>&1)" || status=$?
    if [ "$status" != 0 ] && [ "$status" != 3 ]; then echo "$message" >&2; exit 2; fi
  fi
  # shellcheck source=docker/common.sh
  source docker/common.sh
  seed_rl_require_docker_engine run_local.sh
  "$ROOT/docker/build.sh" "$ENVIRONMENT"
  exec "$ROOT/docker/run.sh" "$ENVIRONMENT" "$AGENT" "$NUM_ACTORS" "$ENV_BATCH_SIZE" \
    "${EXTRA_FLAGS[@]}"
fi

# shellcheck source=scripts/ensure_venv.sh
source scripts/ensure_venv.sh
# shellcheck source=scripts/runs.sh
source scripts/runs.sh
case "$ENVIRONMENT" in
  football)
    seed_rl_ensure_venv ""
    check_flags "$SEED_RL_PYTHON" || exit $?  # Before gfootball's build, which takes minutes.
    FLAGS_CHECKED=1
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
[ -n "${FLAGS_CHECKED:-}" ] || check_flags "$PY" || exit $?
case "$LOGDIR" in /*) ;; *) LOGDIR="$ROOT/$LOGDIR";; esac  # The processes run in $ROOT.

TMUX_MODE=0
if [ -z "${SEED_RL_NO_TMUX:-}" ] && command -v tmux >/dev/null 2>&1 && [ -t 0 ] && [ -t 1 ]; then
  TMUX_MODE=1
fi
tensorboard_port="${SEED_RL_TENSORBOARD_PORT:-auto}"
if [ -n "${SEED_RL_NO_TENSORBOARD:-}" ] || [ ! -x "$VENV_BIN/tensorboard" ]; then
  tensorboard_port=none
fi
# This run takes the logdir, the learner's address and TensorBoard's port, or stops here with
# one line naming the live run that holds one (see seed_rl/launch/local_run.py).
acquire=("$PY" -m seed_rl.launch.local_run acquire --logdir="$LOGDIR" --address="$ADDRESS"
         --owner_pid=$$ --checkout="$ROOT" --registry="$(seed_rl_run_registry "$ROOT")"
         --tensorboard_port="$tensorboard_port"
         --tensorboard_host="${SEED_RL_TENSORBOARD_HOST:-localhost}")
if [ "$TMUX_MODE" = 1 ]; then acquire+=(--tmux); fi
# Without --server_address the learner also serves shm:NAME, the actors' address (see above).
LOCAL_SHM=0
if [ "$ADDRESS_GIVEN" = 0 ] && [ "$LOCAL_TRANSPORT" = shm ]; then
  LOCAL_SHM=1
  acquire+=(--local_shm)
fi
acquired="$("${acquire[@]}")" || exit 1
while IFS='=' read -r key value; do
  case "$key" in
    run_id) RUN_ID="$value";;
    lock) LOCK="$value";;
    pidfile) PIDFILE="$value";;
    tensorboard_port) TENSORBOARD_PORT="$value";;
    tmux_session) SESSION="$value";;
    learner_address) LEARNER_ADDRESS="$value";;
    actor_address) ACTOR_ADDRESS="$value";;
  esac
done <<< "$acquired"
trap 'seed_rl_release_run "$LOCK" "$RUN_ID"' EXIT

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
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
export PYTHONUNBUFFERED=1

# Where the actors alone fill the cores, the learner's TensorFlow runs each op on one thread and
# two ops at a time (an inference batch beside a training step): 1.1x the frames/s of its
# default (one thread per core for both) on 2 cores with 2 actors (docs/performance.md). The
# TF_NUM_INTRAOP_THREADS and TF_NUM_INTEROP_THREADS of the caller win.
learner_env=()
if [ -z "${TF_NUM_INTRAOP_THREADS:-}${TF_NUM_INTEROP_THREADS:-}" ] &&
   [ "$(nproc)" -le "$NUM_ACTORS" ]; then
  learner_env=(env TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=2)
  echo "seed_rl: $NUM_ACTORS actor(s) on $(nproc) core(s): the learner's TensorFlow uses 1" \
       "thread per op, 2 ops at a time (TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=2)"
fi
learner_cmd=("${learner_env[@]}" "$PY" -m "$MODULE" --run_mode=learner --logtostderr
             "${COMMON[@]}")
actor_address_flag=()
if [ "$LOCAL_SHM" = 1 ]; then
  learner_cmd+=(--server_address="$LEARNER_ADDRESS")
  actor_address_flag=(--server_address="$ACTOR_ADDRESS")
fi
# Sets ACTOR_CMD to the command of actor $1 (actors never use a GPU).
actor_cmd() { ACTOR_CMD=(env CUDA_VISIBLE_DEVICES= "$PY" -m "$MODULE" --run_mode=actor --logtostderr
                         --task="$1" "${COMMON[@]}" "${actor_address_flag[@]}"); }
tensorboard_cmd=("$VENV_BIN/tensorboard" --logdir "$LOGDIR" --port "$TENSORBOARD_PORT")
# In a container TensorBoard must listen on every interface to be reachable through the
# published port (the images set SEED_RL_TENSORBOARD_HOST=0.0.0.0).
if [ -n "${SEED_RL_TENSORBOARD_HOST:-}" ]; then
  tensorboard_cmd+=(--host "$SEED_RL_TENSORBOARD_HOST")
fi

echo "seed_rl: $ENVIRONMENT $AGENT, $NUM_ACTORS actor(s) x $ENV_BATCH_SIZE env(s);" \
     "logdir $LOGDIR; learner on $LEARNER_ADDRESS; actors connect to $ACTOR_ADDRESS"
if checkpoint="$(seed_rl_resumed_checkpoint "$LOGDIR")"; then
  echo "seed_rl: resuming from the checkpoint $checkpoint; delete $LOGDIR to start afresh"
fi
board="TensorBoard on http://localhost:$TENSORBOARD_PORT"
[ -n "$TENSORBOARD_PORT" ] || board="no TensorBoard"
stop_command="$(printf '%q ' "$ROOT/stop_local.sh" "--logdir=$LOGDIR")"

if [ "$TMUX_MODE" = 1 ]; then
  # A session of this run's own (named after its logdir), which carries the run's id: the lock
  # stays live while it exists, and stop_local.sh stops it.
  q() { printf '%q ' "$@"; }
  # The shell line that runs a command in its window and also writes its output to
  # LOGDIR/logs/$1.log, as in background mode. tee ignores Ctrl-C and SIGTERM: they are for the
  # command (the learner checkpoints on them), and tee, ending when the command's output closes,
  # keeps its last lines. stop_local.sh signals every process of a window, tee included. The
  # line's exit status is tee's, which nothing reads here (the learner's log says how it ended).
  # (q leaves a space before 2>&1.)
  logged() {
    printf '%s2>&1 | (trap "" INT TERM; exec tee %q)' "$(q "${@:2}")" "$LOGDIR/logs/$1.log"
  }
  target="=$SESSION"
  tmux new-session -d -s "$SESSION" -n main
  tmux set-option -t "$target:" @seed_rl_run_id "$RUN_ID" >/dev/null
  tmux set-option -t "$target:" @seed_rl_logdir "$LOGDIR" >/dev/null
  # The windows' shells come from the tmux server, which may be older than this run and then
  # lacks this script's environment: unbuffered Python keeps the logs and the progress live.
  tmux set-environment -t "$target" PYTHONUNBUFFERED 1
  tmux set-environment -t "$target" TF_CPP_MIN_LOG_LEVEL "$TF_CPP_MIN_LOG_LEVEL"
  tmux send-keys -t "$target:main" "alias stop_seed=$(printf '%q' "$stop_command"); clear; \
echo 'SEED RL: switch windows with CTRL+b then the window number; stop with stop_seed'; \
echo $(printf '%q' "$board; progress and ETA in window progress; logs in $LOGDIR/logs")" Enter
  tmux send-keys -t "$target:main" "stop_seed"
  # The progress line of background mode, read from the learner's log. Without --pid (the
  # learner's pid is not known here): it ends with the learner's "Training finished" line, or
  # stop_local.sh stops it with the run.
  tmux new-window -d -t "$target" -n progress
  tmux send-keys -t "$target:progress" "$(q "$PY" -m seed_rl.launch.progress_monitor \
    --log "$LOGDIR/logs/learner.log")" Enter
  tmux new-window -d -t "$target" -n learner
  tmux send-keys -t "$target:learner" "$(logged learner "${learner_cmd[@]}")" Enter
  for ((i = 0; i < NUM_ACTORS; i++)); do
    tmux new-window -d -t "$target" -n "actor_$i"
    actor_cmd "$i"
    tmux send-keys -t "$target:actor_$i" "$(logged "actor_$i" "${ACTOR_CMD[@]}")" Enter
  done
  if [ -n "$TENSORBOARD_PORT" ]; then
    tmux new-window -d -t "$target" -n tensorboard
    tmux send-keys -t "$target:tensorboard" "$(logged tensorboard "${tensorboard_cmd[@]}")" Enter
  fi
  trap - EXIT  # The lock stays with the session; stop_local.sh releases it.
  exec tmux attach -t "$target"
fi

# Background mode: one log per process, a progress line here, everything stopped on exit.
# The pid file ("name pid start" lines, in the logdir) is how stop_local.sh finds the run.
record_pid() { echo "$1 $2 $(seed_rl_pid_start "$2" || true)" >> "$PIDFILE"; }
stopping=0
# Stops what is left of the run (stop_local.sh: the learner first, which checkpoints), after
# saying $1 where given.
stop_all() {
  [ "$stopping" = 0 ] || return 0
  stopping=1
  # Ignored from here on, also by stop_local.sh (it inherits that): another Ctrl-C while
  # stopping would otherwise kill both and leave the actors running.
  trap '' INT TERM
  if [ -n "${1:-}" ]; then printf '\n%s\n' "$1"; fi
  "$ROOT/stop_local.sh" --pidfile "$PIDFILE" >/dev/null 2>&1 || true
}
trap 'stop_all "seed_rl: stopping (the learner writes a checkpoint first; at most about 70 s)"
      exit 130' INT TERM
: > "$PIDFILE"
"${learner_cmd[@]}" > "$LOGDIR/logs/learner.log" 2>&1 &
LEARNER_PID=$!
record_pid learner "$LEARNER_PID"
FEEDER_PIDS=()  # The actors and TensorBoard: what serves the learner or shows its summaries.
for ((i = 0; i < NUM_ACTORS; i++)); do
  actor_cmd "$i"
  "${ACTOR_CMD[@]}" > "$LOGDIR/logs/actor_$i.log" 2>&1 &
  record_pid "actor_$i" $!
  FEEDER_PIDS+=($!)
done
if [ -n "$TENSORBOARD_PORT" ]; then
  "${tensorboard_cmd[@]}" > "$LOGDIR/logs/tensorboard.log" 2>&1 &
  record_pid tensorboard $!
  FEEDER_PIDS+=($!)
fi
echo "seed_rl: logs in $LOGDIR/logs; $board; stop with Ctrl-C or ${stop_command% }"

"$PY" -m seed_rl.launch.progress_monitor --log "$LOGDIR/logs/learner.log" \
  --pid "$LEARNER_PID" &
MONITOR_PID=$!

# The monitor ends at the learner's line saying that training finished, with the status
# progress_monitor.EXIT_TRAINING_FINISHED, or when the learner exits. The actors stop by
# themselves then (the learner tells them that training finished); TensorBoard has nothing left
# to show and is stopped at once, with any actor not gone yet, while the learner exits (seconds
# of TensorFlow's teardown), not after it.
MONITOR_SAW_FINISHED=3  # progress_monitor.EXIT_TRAINING_FINISHED
while kill -0 "$LEARNER_PID" 2>/dev/null && kill -0 "$MONITOR_PID" 2>/dev/null; do
  sleep 0.2
done
if kill -0 "$LEARNER_PID" 2>/dev/null; then
  monitor_status=0
  wait "$MONITOR_PID" || monitor_status=$?
  MONITOR_PID=""  # Waited for: its pid may be another process's now.
  if [ "$monitor_status" = "$MONITOR_SAW_FINISHED" ]; then
    kill -TERM "${FEEDER_PIDS[@]}" 2>/dev/null || true
  fi
fi
set +e
wait "$LEARNER_PID"
LEARNER_STATUS=$?
set -e
[ -z "$MONITOR_PID" ] || kill "$MONITOR_PID" 2>/dev/null || true
stop_all ""  # Whatever is left: nothing, unless an actor or TensorBoard ignored SIGTERM.
if [ "$LEARNER_STATUS" -ne 0 ]; then
  echo "seed_rl: the learner exited with status $LEARNER_STATUS; last lines of its log" \
       "($LOGDIR/logs/learner.log):" >&2
  tail -n 20 "$LOGDIR/logs/learner.log" >&2
  exit "$LEARNER_STATUS"
fi
# The next steps, as commands to paste: with the venv's programs relative to the checkout when
# they are in it (the commands then run there).
in_checkout() { case "$1" in "$ROOT"/*) echo "${1#"$ROOT"/}";; *) echo "$1";; esac; }
q_logdir="$(printf '%q' "$LOGDIR")"
q_python="$(printf '%q' "$(in_checkout "$PY")")"
where=""
case "$PY" in "$ROOT"/*) where=" (in $ROOT)";; esac
echo "seed_rl: training finished; next$where:"
echo "  $q_python -m seed_rl.evaluate --logdir=$q_logdir --episodes=10 --greedy" \
     " # play the policy"
echo "  $q_python -m seed_rl.plot $q_logdir --out $(printf '%q' "$LOGDIR/curve.png")" \
     " # the learning curve"
echo "  $(printf '%q' "$(in_checkout "$VENV_BIN/tensorboard")") --logdir $q_logdir" \
     " # the summaries"
