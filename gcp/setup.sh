#!/usr/bin/env bash
# Google Cloud support of seed_rl: trains on Vertex AI with a CustomJob of two worker pools,
# pool 0 the learner (one machine with the accelerators), pool 1 the actor machines. Every
# container starts `python3 /seed_rl/gcp/run.py`, which reads Vertex AI's TF_CONFIG and runs the
# learner or this machine's actors.
#
# Two uses:
#   gcp/setup.sh [--dry-run]   one-time set-up of a project: enables the APIs, creates the
#                              Artifact Registry repository and the bucket, lets docker push
#                              there.
#   source gcp/setup.sh        what every gcp/train_<scenario>.sh does: it sets the scenario
#                              (ENVIRONMENT, AGENT, SCENARIO, machine shape, HPARAMS) and calls
#                              start_training "$@", which checks the flags against the entry
#                              point, builds and pushes the image, writes the CustomJob spec and
#                              submits it with gcloud ai custom-jobs create.
#
# --dry-run writes the spec and prints it and every command, calling neither gcloud nor docker.
# The flags (the scenario's and yours) are checked first, also in a dry run, with the entry
# point's own definitions and the learner's checks of its batch sizes
# (seed_rl/launch/flag_check.py, about a second, no TensorFlow), by the Python of
# ${SEED_RL_VENV:-.venv} (else python3); where no Python here can import the entry point, they
# are not checked and a line says so.
#
# Environment (defaults):
#   PROJECT_ID   Google Cloud project (gcloud config get-value project; "your-project-id" in a
#                dry run)
#   REGION       Vertex AI region, also of the repository and the bucket (us-central1)
#   REPOSITORY   Artifact Registry Docker repository (seed-rl)
#   BUCKET       Cloud Storage bucket, without gs:// (${PROJECT_ID}-seed-rl); each job writes
#                its checkpoints and summaries to gs://BUCKET/JOB_NAME (the job's output
#                directory, passed to the learner as --logdir)
#   IMAGE_URI    image the job runs (${REGION}-docker.pkg.dev/${PROJECT_ID}/${REPOSITORY}/
#                seed_rl:${ENVIRONMENT})
#   SKIP_BUILD   1: do not build and push the image, use IMAGE_URI as it is
#   JOB_NAME     job display name and output folder (seed_rl_<scenario>_<UTC date_time>)
#   SPEC_DIR     where the spec is written (${TMPDIR:-/tmp}/seed_rl_gcp), as JOB_NAME.yaml
#   SERVICE_ACCOUNT  service account the job runs as (Vertex AI's default when unset)
#   JOB_TIMEOUT  maximum job run time, e.g. 1209600s (Vertex AI's default, 7 days, when unset)
#   STREAM_LOGS  1: follow the job's logs after submitting it
# and the scenario's machine shape, each with the scenario's default:
#   LEARNER_MACHINE_TYPE, LEARNER_ACCELERATOR_TYPE, LEARNER_ACCELERATOR_COUNT (0: no
#   accelerator), ACTOR_MACHINE_TYPE, NUM_ACTOR_MACHINES, ACTORS_PER_MACHINE, ENV_BATCH_SIZE.

SEED_RL_GCP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SEED_RL_GCP_DRY_RUN=0

# Prints a command as a shell would read it, after "+ ".
_seed_rl_gcp_show() {
  local quoted
  quoted="$(printf '%q ' "$@")"
  echo "+ ${quoted% }"
}

# Prints a command, and runs it unless this is a dry run.
_seed_rl_gcp_run() {
  _seed_rl_gcp_show "$@"
  if [ "$SEED_RL_GCP_DRY_RUN" != 1 ]; then "$@"; fi
}

_seed_rl_gcp_die() {
  echo "seed_rl gcp: error: $*" >&2
  exit 1
}

# Sets PROJECT_ID, REGION, REPOSITORY and BUCKET (defaults as in the header).
_seed_rl_gcp_project() {
  if [ -z "${PROJECT_ID:-}" ]; then
    if [ "$SEED_RL_GCP_DRY_RUN" = 1 ]; then
      PROJECT_ID=your-project-id
      echo "seed_rl gcp: PROJECT_ID is not set; the dry run uses the placeholder $PROJECT_ID" >&2
    else
      PROJECT_ID="$(gcloud config get-value project 2>/dev/null || true)"
      [ -n "$PROJECT_ID" ] ||
        _seed_rl_gcp_die "no project: set PROJECT_ID or run 'gcloud config set project PROJECT_ID'"
    fi
  fi
  REGION="${REGION:-us-central1}"
  REPOSITORY="${REPOSITORY:-seed-rl}"
  BUCKET="${BUCKET:-$PROJECT_ID-seed-rl}"
  BUCKET="${BUCKET#gs://}"
  BUCKET="${BUCKET%/}"
}

# Exits unless the commands a real (not dry) run needs are installed.
_seed_rl_gcp_require() {
  local command
  [ "$SEED_RL_GCP_DRY_RUN" = 1 ] && return 0
  for command in "$@"; do
    command -v "$command" >/dev/null 2>&1 ||
      _seed_rl_gcp_die "$command is not installed (needed here; --dry-run works without it)"
  done
}

# Creates the Artifact Registry repository and the bucket where they do not exist yet, and lets
# docker push to the repository (idempotent, so start_training runs it every time).
_seed_rl_gcp_ensure_resources() {
  local repository_check=(gcloud artifacts repositories describe "$REPOSITORY"
                          --project="$PROJECT_ID" --location="$REGION")
  local repository_create=(gcloud artifacts repositories create "$REPOSITORY"
                           --project="$PROJECT_ID" --location="$REGION"
                           --repository-format=docker --description="seed_rl images")
  local bucket_check=(gcloud storage buckets describe "gs://$BUCKET" --project="$PROJECT_ID")
  local bucket_create=(gcloud storage buckets create "gs://$BUCKET" --project="$PROJECT_ID"
                       --location="$REGION" --uniform-bucket-level-access)
  if [ "$SEED_RL_GCP_DRY_RUN" = 1 ]; then
    local check create
    check="$(_seed_rl_gcp_show "${repository_check[@]}")"
    create="$(_seed_rl_gcp_show "${repository_create[@]}")"
    echo "$check >/dev/null 2>&1 || ${create#+ }"
    check="$(_seed_rl_gcp_show "${bucket_check[@]}")"
    create="$(_seed_rl_gcp_show "${bucket_create[@]}")"
    echo "$check >/dev/null 2>&1 || ${create#+ }"
  else
    "${repository_check[@]}" >/dev/null 2>&1 || _seed_rl_gcp_run "${repository_create[@]}"
    "${bucket_check[@]}" >/dev/null 2>&1 || _seed_rl_gcp_run "${bucket_create[@]}"
  fi
  _seed_rl_gcp_run gcloud auth configure-docker "$REGION-docker.pkg.dev" --quiet
}

# One-time set-up of a project (gcp/setup.sh run as a script).
seed_rl_gcp_setup() {
  case "${1:-}" in
    '') ;;
    --dry-run) SEED_RL_GCP_DRY_RUN=1;;
    *) echo "Usage: $0 [--dry-run]   (see the header of $0)" >&2; exit 2;;
  esac
  _seed_rl_gcp_require gcloud
  _seed_rl_gcp_project
  echo "seed_rl gcp: setting up project $PROJECT_ID, region $REGION, repository $REPOSITORY, bucket gs://$BUCKET" >&2
  _seed_rl_gcp_run gcloud services enable aiplatform.googleapis.com \
    artifactregistry.googleapis.com storage.googleapis.com --project="$PROJECT_ID"
  _seed_rl_gcp_ensure_resources
  echo "seed_rl gcp: done; now e.g. gcp/train_football_scoring.sh (or with --dry-run first)" >&2
}

# Writes "  - "VALUE"" lines: one YAML list item per argument, double-quoted (JSON escapes).
_seed_rl_gcp_yaml_items() {
  local indent="$1" item
  shift
  for item in "$@"; do
    item="${item//\\/\\\\}"
    item="${item//\"/\\\"}"
    printf '%s- "%s"\n' "$indent" "$item"
  done
}

# Writes the CustomJobSpec (the file `gcloud ai custom-jobs create --config` reads) to $1.
# Arguments after $1: the container's args.
_seed_rl_gcp_write_spec() {
  local file="$1" pool
  shift
  {
    echo "# Vertex AI CustomJobSpec of the seed_rl job $JOB_NAME"
    echo "# ($ENVIRONMENT $AGENT), written by gcp/$(basename "$0"); submit it with:"
    echo "#   gcloud ai custom-jobs create --project=$PROJECT_ID --region=$REGION \\"
    echo "#     --display-name=$JOB_NAME --config=$file"
    echo "# Pool 0 runs the learner, pool 1 the actors ($NUM_ACTOR_MACHINES machines x" \
         "$ACTORS_PER_MACHINE actors x $ENV_BATCH_SIZE envs)."
    echo "workerPoolSpecs:"
    for pool in 0 1; do
      echo "  - machineSpec:"
      if [ "$pool" = 0 ]; then
        echo "      machineType: \"$LEARNER_MACHINE_TYPE\""
        if [ "$LEARNER_ACCELERATOR_COUNT" -gt 0 ]; then
          echo "      acceleratorType: \"$LEARNER_ACCELERATOR_TYPE\""
          echo "      acceleratorCount: $LEARNER_ACCELERATOR_COUNT"
        fi
        echo "    replicaCount: 1"
      else
        echo "      machineType: \"$ACTOR_MACHINE_TYPE\""
        echo "    replicaCount: $NUM_ACTOR_MACHINES"
      fi
      echo "    containerSpec:"
      echo "      imageUri: \"$IMAGE_URI\""
      echo "      command:"
      _seed_rl_gcp_yaml_items "        " python3 /seed_rl/gcp/run.py
      echo "      args:"
      _seed_rl_gcp_yaml_items "        " "$@"
    done
    echo "baseOutputDirectory:"
    echo "  outputUriPrefix: \"$JOB_DIR\""
    if [ -n "${SERVICE_ACCOUNT:-}" ]; then echo "serviceAccount: \"$SERVICE_ACCOUNT\""; fi
    if [ -n "${JOB_TIMEOUT:-}" ]; then
      echo "scheduling:"
      echo "  timeout: \"$JOB_TIMEOUT\""
    fi
  } > "$file"
}

# An example of the scenario's extra flags, for the usage message.
_seed_rl_gcp_flag_example() {
  case "$ENVIRONMENT" in
    atari) echo "--game=Breakout";;
    football) echo "--game=academy_empty_goal_close";;
    dmlab) echo "--game=explore_goal_locations_large";;
    mujoco) echo "--env_name=Hopper-v5";;
    *) echo "--seed=1";;
  esac
}

# The usage of a train script, with its scenario (SCENARIO and the flags HPARAMS) and an example:
# on stdout and status 0 for --help ($1 = 0), else on stderr and status 2.
_seed_rl_gcp_train_usage() {
  local status="${1:-2}" output=2 example script
  [ "$status" = 0 ] && output=1
  example="$(_seed_rl_gcp_flag_example)"
  script="gcp/$(basename "$0")"
  cat >&"$output" <<EOF
Usage: $script ${SCENARIO_CHOICES:+$SCENARIO_CHOICES }[--dry-run] [--flag=value ...]
Trains $ENVIRONMENT $AGENT on Vertex AI, scenario $SCENARIO: builds and pushes the image, writes
the CustomJob spec and submits it. The scenario's flags:
  ${HPARAMS[*]}
--flag=value arguments go to the learner and the actors after these (the last value of a flag
wins).
  --dry-run   write and print the spec and the commands; call neither gcloud nor docker
  -h, --help  this message
Actors: $NUM_ACTOR_MACHINES machines (NUM_ACTOR_MACHINES) x $ACTORS_PER_MACHINE actors each
(ACTORS_PER_MACHINE) x $ENV_BATCH_SIZE environment(s) each (ENV_BATCH_SIZE): environment
variables, as are the project, region and bucket (see the header of gcp/setup.sh).
Example:
  $script ${SCENARIO_CHOICES:+$SCENARIO_ARG }--dry-run $example
EOF
  exit "$status"
}

# Checks the container's flags ($@, those after "--") as the learner will get them from
# gcp/run.py, before anything is built: a bad flag stops here with one line and status 2.
_seed_rl_gcp_check_flags() {
  local python="${SEED_RL_VENV:-$SEED_RL_GCP_ROOT/.venv}/bin/python" message status=0 shape
  shape="NUM_ACTOR_MACHINES x ACTORS_PER_MACHINE x ENV_BATCH_SIZE = $NUM_ACTOR_MACHINES x"
  shape+=" $ACTORS_PER_MACHINE x $ENV_BATCH_SIZE"
  if [ ! -x "$python" ]; then
    python="$(command -v python3 2>/dev/null || true)"
  fi
  if [ -z "$python" ]; then
    echo "seed_rl gcp: flags not checked here (no Python; ./run_tests.sh creates .venv)" >&2
    return 0
  fi
  message="$(cd "$SEED_RL_GCP_ROOT" && "$python" -m seed_rl.launch.flag_check \
               --prefix="seed_rl gcp: error" \
               --shape="$shape" \
               "seed_rl.environments.$ENVIRONMENT.${AGENT}_main" --run_mode=learner \
               --num_envs=$((NUM_ACTOR_MACHINES * ACTORS_PER_MACHINE * ENV_BATCH_SIZE)) \
               --env_batch_size="$ENV_BATCH_SIZE" --server_address='[::]:2222' "$@" 2>&1)" ||
    status=$?
  case "$status" in
    0) ;;
    2) echo "$message" >&2; exit 2;;
    *) echo "seed_rl gcp: flags not checked here (${message##*: }; ./run_tests.sh sets up" \
            ".venv)" >&2;;
  esac
}

_seed_rl_gcp_check_count() {  # NAME VALUE MIN
  [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] ||
    _seed_rl_gcp_die "$1 must be an integer >= $3, got '$2'"
}

# For the scripts that take their scenario as an argument (gcp/train_football.sh [scoring|...]):
# the first argument that is not an option is the scenario, SCENARIO_ARG ($1 when there is
# none); the others stay in SCENARIO_ARGS, for start_training. $2...: the script's arguments.
take_scenario_argument() {
  local default="$1" argument
  shift
  SCENARIO_ARG=""
  SCENARIO_ARGS=()
  for argument in "$@"; do
    if [ -z "$SCENARIO_ARG" ] && [[ "$argument" != -* ]]; then
      SCENARIO_ARG="$argument"
    else
      SCENARIO_ARGS+=("$argument")
    fi
  done
  SCENARIO_ARG="${SCENARIO_ARG:-$default}"
}

# Sets the scenario's machine shape: machine_shape LEARNER_MACHINE_TYPE LEARNER_ACCELERATOR_TYPE
# LEARNER_ACCELERATOR_COUNT ACTOR_MACHINE_TYPE NUM_ACTOR_MACHINES ACTORS_PER_MACHINE. A variable
# the caller already set keeps its value; ENV_BATCH_SIZE defaults to 1.
machine_shape() {
  LEARNER_MACHINE_TYPE="${LEARNER_MACHINE_TYPE:-$1}"
  LEARNER_ACCELERATOR_TYPE="${LEARNER_ACCELERATOR_TYPE:-$2}"
  LEARNER_ACCELERATOR_COUNT="${LEARNER_ACCELERATOR_COUNT:-$3}"
  ACTOR_MACHINE_TYPE="${ACTOR_MACHINE_TYPE:-$4}"
  NUM_ACTOR_MACHINES="${NUM_ACTOR_MACHINES:-$5}"
  ACTORS_PER_MACHINE="${ACTORS_PER_MACHINE:-$6}"
  ENV_BATCH_SIZE="${ENV_BATCH_SIZE:-1}"
}

# Builds and pushes the image, writes the CustomJob spec and submits it. Expects ENVIRONMENT,
# AGENT, SCENARIO, the machine-shape variables and the array HPARAMS (the scenario's flags);
# its arguments are the train script's.
start_training() {
  local extra_flags=() argument
  for argument in "$@"; do
    case "$argument" in
      --dry-run) SEED_RL_GCP_DRY_RUN=1;;
      -h|--help) _seed_rl_gcp_train_usage 0;;
      --num_envs=*|--task=*|--run_mode=*|--server_address=*|--env_batch_size=*)
        _seed_rl_gcp_die "$argument is set by gcp/run.py from the machine shape (NUM_ACTOR_MACHINES, ACTORS_PER_MACHINE, ENV_BATCH_SIZE)";;
      --*=*|--*) extra_flags+=("$argument");;
      *) echo "$0: unexpected argument '$argument'" >&2; _seed_rl_gcp_train_usage;;
    esac
  done
  _seed_rl_gcp_check_count NUM_ACTOR_MACHINES "$NUM_ACTOR_MACHINES" 1
  _seed_rl_gcp_check_count ACTORS_PER_MACHINE "$ACTORS_PER_MACHINE" 1
  _seed_rl_gcp_check_count ENV_BATCH_SIZE "$ENV_BATCH_SIZE" 1
  _seed_rl_gcp_check_count LEARNER_ACCELERATOR_COUNT "$LEARNER_ACCELERATOR_COUNT" 0
  if [ ${#extra_flags[@]} -gt 0 ]; then
    _seed_rl_gcp_check_flags "${HPARAMS[@]}" "${extra_flags[@]}"
  else
    _seed_rl_gcp_check_flags "${HPARAMS[@]}"
  fi
  if [ "${SKIP_BUILD:-0}" = 1 ]; then
    _seed_rl_gcp_require gcloud
  else
    _seed_rl_gcp_require gcloud docker
  fi
  _seed_rl_gcp_project
  IMAGE_URI="${IMAGE_URI:-$REGION-docker.pkg.dev/$PROJECT_ID/$REPOSITORY/seed_rl:$ENVIRONMENT}"
  JOB_NAME="${JOB_NAME:-seed_rl_${SCENARIO}_$(date -u +%Y%m%d_%H%M%S)}"
  JOB_DIR="gs://$BUCKET/$JOB_NAME"
  local spec_dir="${SPEC_DIR:-${TMPDIR:-/tmp}/seed_rl_gcp}"
  local spec_file="$spec_dir/$JOB_NAME.yaml"
  local num_envs=$((NUM_ACTOR_MACHINES * ACTORS_PER_MACHINE * ENV_BATCH_SIZE))

  if [ "$SEED_RL_GCP_DRY_RUN" = 1 ]; then
    echo "seed_rl gcp: DRY RUN: the commands below are printed, not run"
  fi
  echo "seed_rl gcp: $SCENARIO: $ENVIRONMENT $AGENT, learner $LEARNER_MACHINE_TYPE" \
       "+ ${LEARNER_ACCELERATOR_COUNT} x ${LEARNER_ACCELERATOR_TYPE:-no accelerator}," \
       "$NUM_ACTOR_MACHINES x $ACTOR_MACHINE_TYPE with $ACTORS_PER_MACHINE actor(s) x" \
       "$ENV_BATCH_SIZE env(s) each ($num_envs envs); project $PROJECT_ID, region $REGION"

  _seed_rl_gcp_ensure_resources
  if [ "${SKIP_BUILD:-0}" = 1 ]; then
    echo "seed_rl gcp: SKIP_BUILD=1: using $IMAGE_URI as it is"
  else
    _seed_rl_gcp_run "$SEED_RL_GCP_ROOT/docker/build.sh" "$ENVIRONMENT"
    _seed_rl_gcp_run env IMAGE_URI="$IMAGE_URI" "$SEED_RL_GCP_ROOT/docker/push.sh" "$ENVIRONMENT"
  fi

  # The container's arguments: gcp/run.py's own, then after "--" the flags of the learner and
  # the actors (gcp/run.py adds --run_mode, --task, --server_address, --num_envs and
  # --env_batch_size).
  local container_args=(
    "--environment=$ENVIRONMENT" "--agent=$AGENT" "--workers=$NUM_ACTOR_MACHINES"
    "--actors_per_worker=$ACTORS_PER_MACHINE" "--env_batch_size=$ENV_BATCH_SIZE"
    --
    "--logdir=$JOB_DIR" "${HPARAMS[@]}")
  if [ ${#extra_flags[@]} -gt 0 ]; then container_args+=("${extra_flags[@]}"); fi
  mkdir -p "$spec_dir"
  _seed_rl_gcp_write_spec "$spec_file" "${container_args[@]}"
  echo "seed_rl gcp: CustomJob spec $spec_file:"
  sed 's/^/    /' "$spec_file"

  local create=(gcloud ai custom-jobs create --project="$PROJECT_ID" --region="$REGION"
                --display-name="$JOB_NAME" --config="$spec_file" --format='value(name)')
  if [ "$SEED_RL_GCP_DRY_RUN" = 1 ]; then
    _seed_rl_gcp_show "${create[@]}"
    echo "seed_rl gcp: dry run done; without --dry-run the job writes to $JOB_DIR"
    return 0
  fi
  _seed_rl_gcp_show "${create[@]}"
  local job
  job="$("${create[@]}")" || _seed_rl_gcp_die "gcloud ai custom-jobs create failed (see above)"
  echo "seed_rl gcp: submitted $job"
  echo "  logs:        gcloud ai custom-jobs stream-logs $job"
  echo "  state:       gcloud ai custom-jobs describe $job"
  echo "  stop:        gcloud ai custom-jobs cancel $job"
  echo "  TensorBoard: tensorboard --logdir $JOB_DIR"
  if [ "${STREAM_LOGS:-0}" = 1 ]; then
    _seed_rl_gcp_run gcloud ai custom-jobs stream-logs "$job"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  seed_rl_gcp_setup "$@"
fi
