#!/usr/bin/env bash
# Stops what run_local.sh started.
#
#   ./stop_local.sh                 stop the runs this checkout started (and only those)
#   ./stop_local.sh --logdir=DIR    stop the run that owns DIR (DIR/run_local.lock)
#   ./stop_local.sh SESSION         stop that tmux session
#   ./stop_local.sh --pidfile FILE  stop the background processes recorded in FILE
#   ./stop_local.sh --docker [NAME] stop the run in container NAME (run_local.sh --docker's,
#                                   default $SEED_RL_CONTAINER_NAME or seed_rl), then the container
#
# Every run records itself in its logdir (run_local.lock: the run, its tmux session or pid file)
# and in this checkout's run registry (~/.cache/seed_rl/runs/<hash of the checkout's path>, or
# $SEED_RL_RUN_REGISTRY), so runs of other checkouts and of other users are left alone.
# The learner gets SIGTERM first and up to 60 s to write its checkpoint while the actors still
# feed it (a tmux run's progress monitor and TensorBoard stop meanwhile); then the others get
# SIGTERM, and whatever is left after 10 s SIGKILL.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/runs.sh
source "$ROOT/scripts/runs.sh"

descendants() {  # PIDs of the whole process tree under $1, children first.
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do descendants "$child"; echo "$child"; done
}

is_ours() {  # Is PID $1 still a seed_rl or tensorboard process (not a reused PID)?
  tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qE 'seed_rl|tensorboard'
}

wait_gone() {  # wait_gone SECONDS PID... : wait until all PIDs exited or time ran out.
  local deadline=$((SECONDS + $1)); shift
  local pid
  while [ "$SECONDS" -lt "$deadline" ]; do
    local alive=0
    for pid in "$@"; do seed_rl_pid_alive "$pid" && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.2
  done
  return 1
}

stop_group() {  # stop_group LEARNER_PIDS -- OTHER_PIDS
  local learners=() others=() seen_separator=0 pid
  for pid in "$@"; do
    if [ "$pid" = "--" ]; then seen_separator=1; continue; fi
    if [ "$seen_separator" = 0 ]; then learners+=("$pid"); else others+=("$pid"); fi
  done
  if [ ${#learners[@]} -gt 0 ]; then
    kill -TERM "${learners[@]}" 2>/dev/null
    wait_gone 60 "${learners[@]}" || echo "stop_local.sh: learner did not stop in 60 s" >&2
  fi
  local all=("${learners[@]}" "${others[@]}")
  [ ${#all[@]} -gt 0 ] || return 0
  kill -TERM "${all[@]}" 2>/dev/null
  wait_gone 10 "${all[@]}" || kill -KILL "${all[@]}" 2>/dev/null
  return 0
}

# Stops the processes of a pid file ("name pid [start]" lines) that still run; the start time,
# where recorded, must match (a reused pid is left alone). Returns 1 if there was nothing to stop.
stop_pidfile() {
  local file="$1" name pid start learners=() others=()
  [ -f "$file" ] || { echo "stop_local.sh: no pid file $file" >&2; return 1; }
  while read -r name pid start; do
    if [ -z "$pid" ] || ! seed_rl_pid_alive "$pid" "$start" || ! is_ours "$pid"; then continue; fi
    if [ "$name" = learner ]; then learners+=("$pid"); else others+=("$pid"); fi
  done < "$file"
  rm -f "$file"
  [ $((${#learners[@]} + ${#others[@]})) -gt 0 ] || return 1
  echo "stop_local.sh: stopping the run recorded in $file"
  stop_group "${learners[@]}" -- "${others[@]}"
}

# Stops the tmux session $1 of run_local.sh: the processes of each window (with the tee that
# writes a window's log, which ignores SIGTERM and ends when its process does), then the session.
stop_tmux() {
  local session="$1" name pane pid learners=() others=() idle=() run_id logdir
  command -v tmux >/dev/null 2>&1 && tmux has-session -t "=$session" 2>/dev/null || return 1
  while read -r name pane; do
    for pid in $(descendants "$pane"); do
      [ "$pid" != "$$" ] || continue
      case "$name" in
        learner) learners+=("$pid");;
        progress|tensorboard) others+=("$pid"); idle+=("$pid");;
        *) others+=("$pid");;
      esac
    done
  done < <(tmux list-panes -s -t "=$session" -F '#{window_name} #{pane_pid}')
  # Its run's records go before the session does (stop_seed runs inside it).
  run_id="$(tmux show-options -t "=$session:" -qv @seed_rl_run_id 2>/dev/null)"
  logdir="$(tmux show-options -t "=$session:" -qv @seed_rl_logdir 2>/dev/null)"
  echo "stop_local.sh: stopping tmux session $session"
  # The progress monitor and TensorBoard (seconds to exit) feed the learner nothing: they stop
  # while it checkpoints. The actors go on feeding it until it is done.
  [ ${#idle[@]} -eq 0 ] || kill -TERM "${idle[@]}" 2>/dev/null
  stop_group "${learners[@]}" -- "${others[@]}"
  [ -z "$run_id" ] || seed_rl_release_run "$logdir/$SEED_RL_LOCK_NAME" "$run_id"
  tmux kill-session -t "=$session" 2>/dev/null
  return 0
}

# Stops the run that owns the lock $1. Returns 1 if no run of it was left to stop.
stop_run() {
  local lock="$1" run_id host session pidfile owner owner_start stopped=0
  run_id="$(seed_rl_record_get "$lock" run_id)"
  [ -n "$run_id" ] || return 1
  host="$(seed_rl_record_get "$lock" host)"
  if [ -n "$host" ] && [ "$host" != "${SEED_RL_RUN_HOST:-$(uname -n)}" ]; then
    echo "stop_local.sh: the run in $(dirname "$lock") runs on $host; stop it there" >&2
    return 1
  fi
  session="$(seed_rl_record_get "$lock" tmux_session)"
  pidfile="$(seed_rl_record_get "$lock" pidfile)"
  owner="$(seed_rl_record_get "$lock" owner_pid)"
  owner_start="$(seed_rl_record_get "$lock" owner_start)"
  if [ -n "$session" ] && seed_rl_tmux_session_of "$session" "$run_id"; then
    stop_tmux "$session"
    return 0
  fi
  if [ -n "$pidfile" ] && [ -f "$pidfile" ] && stop_pidfile "$pidfile"; then stopped=1; fi
  # run_local.sh itself ends once its learner is gone (and releases the lock); one that is still
  # starting its processes is stopped with SIGTERM, which it handles the same way as Ctrl-C.
  if [ -n "$owner" ] && seed_rl_pid_alive "$owner" "$owner_start"; then
    if [ "$stopped" = 0 ] || ! wait_gone 15 "$owner"; then
      kill -TERM "$owner" 2>/dev/null
      wait_gone 80 "$owner" || echo "stop_local.sh: run_local.sh (pid $owner) is still running" >&2
    fi
    stopped=1
  fi
  seed_rl_release_run "$lock" "$run_id"
  [ "$stopped" = 1 ]
}

# Stops the run in the container $1 of docker/run.sh: the stop_local.sh inside it stops the
# run as here (the learner checkpoints into the mounted logdir), its run_local.sh and with it
# the container then end; a container still up after 90 s gets `docker stop`.
stop_container() {
  local name="$1"
  command -v docker >/dev/null 2>&1 || { echo "stop_local.sh: the docker command is not installed" >&2; return 1; }
  [ "$(docker container inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || {
    echo "stop_local.sh: no running container '$name'" >&2; return 1; }
  echo "stop_local.sh: stopping the run in container $name"
  docker exec "$name" ./stop_local.sh
  if ! timeout 90 docker wait "$name" >/dev/null 2>&1; then
    docker stop -t 30 "$name" >/dev/null 2>&1
  fi
  return 0
}

case "${1:-}" in
  --docker) [ $# -le 2 ] || { echo "usage: $0 --docker [CONTAINER]" >&2; exit 1; }
            stop_container "${2:-${SEED_RL_CONTAINER_NAME:-seed_rl}}" || exit 1
            exit 0;;
  --pidfile) [ $# -eq 2 ] || { echo "usage: $0 --pidfile FILE" >&2; exit 1; }
             [ -f "$2" ] || { echo "stop_local.sh: no pid file $2" >&2; exit 1; }
             stop_pidfile "$2"; exit 0;;
  --logdir=*|--logdir)
    if [ "$1" = --logdir ]; then
      [ $# -eq 2 ] || { echo "usage: $0 --logdir=DIR" >&2; exit 1; }
      logdir="$2"
    else
      [ $# -eq 1 ] || { echo "usage: $0 --logdir=DIR" >&2; exit 1; }
      logdir="${1#--logdir=}"
    fi
    lock="$logdir/$SEED_RL_LOCK_NAME"
    [ -f "$lock" ] || { echo "stop_local.sh: no run in $logdir (no $lock)" >&2; exit 1; }
    stop_run "$lock" || echo "stop_local.sh: the run in $logdir had ended already"
    exit 0;;
  -h|--help) sed -n '2,16p' "$0"; exit 0;;
  "") stopped=0
      registry="$(seed_rl_run_registry "$ROOT")"
      for entry in "$registry"/*; do
        [ -f "$entry" ] || continue
        run_id="$(basename "$entry")"
        lock="$(seed_rl_record_get "$entry" logdir)/$SEED_RL_LOCK_NAME"
        if [ "$(seed_rl_record_get "$lock" run_id)" = "$run_id" ]; then
          stop_run "$lock" && stopped=1
        fi
        rm -f "$entry"  # The run is over (or its logdir belongs to another run now).
      done
      [ "$stopped" = 1 ] || echo "stop_local.sh: nothing to stop (no run of $ROOT is running)"
      exit 0;;
  -*) echo "stop_local.sh: unknown option $1; see $0 --help" >&2; exit 1;;
  *) stop_tmux "$1" || { echo "stop_local.sh: no tmux session '$1'" >&2;
                         tmux list-sessions 2>/dev/null; exit 1; }
     exit 0;;
esac
