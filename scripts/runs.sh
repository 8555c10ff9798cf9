#!/usr/bin/env bash
# Sourced by run_local.sh and stop_local.sh: where a run of run_local.sh is recorded, how its
# records are read and released, and which checkpoint of its logdir it resumes. The records
# (see seed_rl/launch/local_run.py, which takes them):
#   LOGDIR/run_local.lock   the run that owns LOGDIR: key=value lines (run_id, owner_pid,
#                           owner_start, host, address, tensorboard_port, pidfile, tmux_session,
#                           registry, reservation=... for each address and port it holds)
#   LOGDIR/run_local.pids   "name pid start" of each background process of the run
#   REGISTRY/RUN_ID         one file per live run this checkout started ("logdir=LOGDIR"), so
#                           that stop_local.sh stops this checkout's runs and nobody else's
# REGISTRY is $SEED_RL_RUN_REGISTRY, else ~/.cache/seed_rl/runs/<hash of the checkout's path>.

# shellcheck disable=SC2034  # Used by the scripts that source this one.
SEED_RL_LOCK_NAME=run_local.lock

# Prints the run registry of the checkout $1.
seed_rl_run_registry() {
  if [ -n "${SEED_RL_RUN_REGISTRY:-}" ]; then
    echo "$SEED_RL_RUN_REGISTRY"
    return 0
  fi
  local hash
  hash="$(printf '%s' "$1" | sha256sum | cut -c1-16)"
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/seed_rl/runs/$hash"
}

# Prints the start time of process $1 (clock ticks since boot, field 22 of /proc/PID/stat): with
# the pid it names one process, even after the pid is reused. Fails when there is no such process.
seed_rl_pid_start() {
  local stat fields
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  [ -n "$stat" ] || return 1
  read -r -a fields <<< "${stat##*) }"
  case "${fields[0]}" in Z|X) return 1;; esac  # Exited; only its parent has not reaped it yet.
  echo "${fields[19]}"
}

# Does process $1 still run, and is it the one that started at $2 (when $2 is given)? A zombie
# (exited, its parent not waiting yet, e.g. a script's caller that waits for the script first)
# does not run.
seed_rl_pid_alive() {
  local start
  start="$(seed_rl_pid_start "$1")" || return 1
  [ -z "${2:-}" ] || [ "$start" = "$2" ]
}

# Prints the value of KEY ($2) in the key=value file $1 (its first line with that key).
seed_rl_record_get() {
  [ -f "$1" ] || return 1
  sed -n "s/^$2=//p" "$1" | head -n 1
}

# Does the tmux session $1 exist and belong to the run $2 (its @seed_rl_run_id option)?
seed_rl_tmux_session_of() {
  [ -n "$1" ] && command -v tmux >/dev/null 2>&1 || return 1
  tmux has-session -t "=$1" 2>/dev/null || return 1
  [ "$(tmux show-options -t "=$1:" -qv @seed_rl_run_id 2>/dev/null)" = "$2" ]
}

# Releases what the run RUN_ID ($2) holds, when the lock $1 is still its own: its port
# reservations, its registry entry and the lock itself. Called once the run's processes are gone.
seed_rl_release_run() {
  local lock="$1" run_id="$2" registry reservation
  [ -n "$run_id" ] && [ "$(seed_rl_record_get "$lock" run_id)" = "$run_id" ] || return 0
  while IFS= read -r reservation; do
    [ -z "$reservation" ] || [ "$(seed_rl_record_get "$reservation" run_id)" != "$run_id" ] ||
      rm -f "$reservation"
  done < <(sed -n 's/^reservation=//p' "$lock")
  registry="$(seed_rl_record_get "$lock" registry)"
  [ -z "$registry" ] || rm -f "$registry/$run_id"
  rm -f "$lock"
}

# Prints the checkpoint that a learner with --logdir=$1 resumes from: the latest one listed in
# the logdir's checkpoint state file (LOGDIR/checkpoint, written by TensorFlow's
# CheckpointManager) whose index file is there, e.g. LOGDIR/ckpt-500. Fails when there is none:
# the learner starts afresh.
seed_rl_resumed_checkpoint() {
  local logdir="$1" path found=""
  [ -f "$logdir/checkpoint" ] || return 1
  while IFS= read -r path; do
    case "$path" in /*) ;; *) path="$logdir/$path";; esac
    if [ -f "$path.index" ]; then found="$path"; fi
  done < <(sed -n 's/^\(all_model_checkpoint_paths\|model_checkpoint_path\): "\(.*\)"$/\2/p' \
               "$logdir/checkpoint")
  [ -n "$found" ] || return 1
  echo "$found"
}
