#!/usr/bin/env bash
# Stops what run_local.sh started: the tmux session (default "seed_rl") and background runs.
#
#   ./stop_local.sh                 stop the tmux session seed_rl and every background run
#   ./stop_local.sh SESSION         stop that tmux session
#   ./stop_local.sh --pidfile FILE  stop the background run recorded in FILE
#
# The learner gets SIGTERM first and up to 60 s to write its checkpoint while the actors still
# feed it; then actors and TensorBoard get SIGTERM, and whatever is left after 10 s SIGKILL.
set -uo pipefail

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
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
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

stop_pidfile() {
  local file="$1" name pid learners=() others=()
  [ -f "$file" ] || { echo "stop_local.sh: no pid file $file" >&2; return 1; }
  while read -r name pid; do
    if [ -z "$pid" ] || ! is_ours "$pid"; then continue; fi
    if [ "$name" = learner ]; then learners+=("$pid"); else others+=("$pid"); fi
  done < "$file"
  if [ $((${#learners[@]} + ${#others[@]})) -gt 0 ]; then
    echo "stop_local.sh: stopping the run recorded in $file"
    stop_group "${learners[@]}" -- "${others[@]}"
  fi
  rm -f "$file"
}

stop_tmux() {
  local session="$1" pane pid learners=() others=()
  command -v tmux >/dev/null 2>&1 && tmux has-session -t "$session" 2>/dev/null || return 1
  while read -r name pane; do
    for pid in $(descendants "$pane"); do
      [ "$pid" != "$$" ] || continue
      if [ "$name" = learner ]; then learners+=("$pid"); else others+=("$pid"); fi
    done
  done < <(tmux list-panes -s -t "$session" -F '#{window_name} #{pane_pid}')
  echo "stop_local.sh: stopping tmux session $session"
  stop_group "${learners[@]}" -- "${others[@]}"
  tmux kill-session -t "$session" 2>/dev/null
  return 0
}

case "${1:-}" in
  --pidfile) [ $# -eq 2 ] || { echo "usage: $0 --pidfile FILE" >&2; exit 1; }
             stop_pidfile "$2"; exit $?;;
  -h|--help) sed -n '2,9p' "$0"; exit 0;;
  "") stopped=0
      stop_tmux seed_rl && stopped=1
      for file in /tmp/seed_rl/run_local.*.pids; do
        [ -f "$file" ] && stop_pidfile "$file" && stopped=1
      done
      [ "$stopped" = 1 ] || echo "stop_local.sh: nothing to stop"
      exit 0;;
  *) stop_tmux "$1" || { echo "stop_local.sh: no tmux session '$1'" >&2;
                         tmux list-sessions 2>/dev/null; exit 1; }
     exit 0;;
esac
