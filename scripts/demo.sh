#!/usr/bin/env bash
# `make demo`: from a fresh machine to a scored root-cause analysis task, in one command.
#
#  1. a Docker engine and docker compose (v2, or Debian's v1), uv and the locked Python
#     environment (scripts/ensure-env.sh, as `make test` does);
#  2. the ARVO-shaped demo task (fixtures: image arena/arvo:<id>-vul and build/assets/<id>/);
#  3. the Python base image of the service images: pulled when a registry answers, else a
#     local Debian stand-in (images/python-base.sh);
#  4. green + purple built and started with docker compose (deploy/, offline demo overlay);
#  5. one task through green's REST API, followed live, then its scores; the dashboard's URL.
#
# The stack keeps running afterwards; `make down` stops it (its volumes, every result, kept),
# `make clean` also deletes its volumes. No API key is needed: purple then runs its offline
# stack-trace analyst. With OPENAI_API_KEY (and optionally OPENAI_BASE_URL,
# PURPLE_MODEL) in the environment or in .env, the same command runs the LLM agent.
#
# Environment: ARENA_DEMO_TASK (default 900007), ARENA_GREEN_PORT / ARENA_PURPLE_PORT (host
# ports, default 9009 / 9019), PYTHON_IMAGE (base image), ARENA_COMPOSE (force a compose).
set -Eeuo pipefail
cd "$(dirname "$0")/.."

task=${ARENA_DEMO_TASK:-900007}
export ARENA_GREEN_PORT=${ARENA_GREEN_PORT:-9009}
export ARENA_PURPLE_PORT=${ARENA_PURPLE_PORT:-9019}
# The stock base image when a registry has it; else our own stand-in, under our own name (an
# official image's name is never given to a local build).
stock_python=python:3.11-slim-bookworm
own_python=arena/python-base:3.11-bookworm
green=http://127.0.0.1:$ARENA_GREEN_PORT
purple=http://127.0.0.1:$ARENA_PURPLE_PORT
t0=$(date +%s)
t_step=
step_name=
hint=
if [ -t 1 ]; then bold=$'\033[1m' blue=$'\033[1;34m' red=$'\033[1;31m' off=$'\033[0m'; else bold='' blue='' red='' off=''; fi

step() {
  local now
  now=$(date +%s)
  [ -z "$t_step" ] || printf '    (%d s)\n' $((now - t_step))
  t_step=$now
  step_name=$1
  hint=${2:-}
  printf '\n%s==>%s %s%s%s\n' "$blue" "$off" "$bold" "$1" "$off"
}

# Run a command that can be silent for minutes (a first build), saying every 15 s on the
# terminal (fd 3, even when the command's output goes to a file) that it is still at work; its
# exit status is the command's.
exec 3>&1
with_progress() {
  local what=$1 t=$SECONDS n=0
  shift
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    n=$((n + 1))
    [ $((n % 15)) != 0 ] || printf '    ... %s: %d s\n' "$what" $((SECONDS - t)) >&3
  done
  wait "$pid"
}

# Any failing command ends the demo with the step it was in and what to do about it; the
# command's own output is just above.
fail() {
  local rc=$1 what=${2:-}
  trap - ERR
  printf '\n%sdemo failed in the step "%s"%s (exit status %d)%s\n' "$red" "$step_name" "$off" "$rc" \
    "${what:+: $what}" >&2
  [ -z "$hint" ] || printf 'what to do: %s\n' "$hint" >&2
  printf 'the output of the failing command is above; `make demo` again is safe (it resumes).\n' >&2
  exit "$rc"
}
trap 'fail $? "$BASH_COMMAND"' ERR

step "Docker engine and compose, uv and the locked Python environment" \
  "install Docker (docs/deployment.md), or start its daemon; scripts/setup.sh does both on Debian"
source scripts/ensure-env.sh
# The whole output into a variable, then its first line: `... | head -1` would end compose with
# SIGPIPE (exit 141 under pipefail) when it prints more than head reads.
compose_version=$(bash deploy/compose.sh version)
printf '%s\n' "${compose_version%%$'\n'*}"
uv --version

step "Demo task arvo:$task (ARVO-shaped fixture: image arena/arvo:$task-vul, build/assets/$task)" \
  "the fixture build's own message is above; retry with: uv run python -m fixtures.build --only $task"
# The tasks' base image first, where its output shows (a first build: clang and LLVM from
# Debian's packages, minutes); then the task (a first build compiles the project in its image,
# reproduces the crash and verifies the fix: a minute or two, silent without the progress lines).
with_progress "base image" bash images/arvo-base.sh
with_progress "building arvo:$task (compile, reproduce the crash, verify the fix)" \
  uv run --frozen python -m fixtures.build --only "$task"

if [ -n "${PYTHON_IMAGE:-}" ]; then
  step "Python base image $PYTHON_IMAGE (PYTHON_IMAGE)" \
    "PYTHON_IMAGE names an image that is neither on this engine nor pullable; unset it to use the default"
  docker image inspect "$PYTHON_IMAGE" >/dev/null 2>&1 || docker pull "$PYTHON_IMAGE"
else
  step "Python base image ($stock_python, else a local stand-in $own_python)" \
    "building the stand-in needs debootstrap and a Debian mirror (DEBIAN_MIRROR); or set PYTHON_IMAGE to a Python 3.11 image you have"
  # A stand-in of an earlier version of this script may carry the stock name: its label tells.
  label=$(docker image inspect -f '{{index .Config.Labels "arena.recipe"}}' "$stock_python" 2>/dev/null) \
    && [ -z "$label" ] && PYTHON_IMAGE=$stock_python && echo "$stock_python: present"
  [ -n "${PYTHON_IMAGE:-}" ] || echo "pulling $stock_python (about 50 MB; a minute on a slow link)..."
  if [ -z "${PYTHON_IMAGE:-}" ] && docker pull -q "$stock_python" >/dev/null 2>&1; then
    PYTHON_IMAGE=$stock_python
    echo "$stock_python: pulled"
  fi
  if [ -z "${PYTHON_IMAGE:-}" ]; then
    echo "no registry answers: the local stand-in $own_python, built from Debian packages"
    bash images/python-base.sh "$own_python"
    PYTHON_IMAGE=$own_python
  fi
fi
export PYTHON_IMAGE

step "Build the service images (deploy/Dockerfile, FROM $PYTHON_IMAGE)" \
  "read the build output above (all of it is in build/demo-compose-build.log); a network error while installing packages: retry"
# Green runs as uid 10001, purple as 10002; the demo's logs go to ./logs/green and ./logs/purple
# on this machine (one folder each: purple never sees green's, which name each task's bug), and
# green keeps its operator token in data/compose/operator-token (mode 0600), where the demo client
# reads it. (ARENA_LOGS_DIR and ARENA_TOKEN_DIR move them: tests run a second demo stack that way.)
logs_dir=${ARENA_LOGS_DIR:-logs}
token_dir=${ARENA_TOKEN_DIR:-data/compose}
mkdir -p build "$logs_dir/green" "$logs_dir/purple" "$token_dir"
if [ "$(id -u)" = 0 ]; then
  chown 10001:10001 "$logs_dir/green" "$token_dir"
  chown 10002:10002 "$logs_dir/purple"
else
  chmod a+rwx "$logs_dir/green" "$logs_dir/purple" "$token_dir"
fi
ARENA_LOGS_DIR=$(cd "$logs_dir" && pwd)
ARENA_TOKEN_DIR=$(cd "$token_dir" && pwd)
export ARENA_LOGS_DIR ARENA_TOKEN_DIR
build_log=build/demo-compose-build.log
if ! with_progress "building the service images (output in $build_log)" \
  bash deploy/compose.sh --demo build >"$build_log" 2>&1; then
  tail -40 "$build_log"
  fail 1 "image build failed; the whole output is in $build_log"
fi
for image in "${ARENA_GREEN_IMAGE:-arena/green:latest}" "${ARENA_PURPLE_IMAGE:-arena/purple:latest}"; do
  docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' "$image"
done

step "Start green + purple (docker compose, project 'arena')" \
  "the services' last log lines are above; a port in use: set ARENA_GREEN_PORT / ARENA_PURPLE_PORT; then make demo again"
# The log folder of this stack (logs/log_<date>/): kept while the stack runs, so that a second
# `make demo` leaves the running containers alone (a new value would recreate them).
run_file=$ARENA_TOKEN_DIR/log-run
ARENA_LOG_RUN=${ARENA_LOG_RUN:-}
if [ -z "$ARENA_LOG_RUN" ] && [ -s "$run_file" ] && [ -n "$(bash deploy/compose.sh --demo ps -q green 2>/dev/null)" ]; then
  ARENA_LOG_RUN=$(cat "$run_file")
fi
ARENA_LOG_RUN=${ARENA_LOG_RUN:-log_$(date -u +%Y-%m-%d_%H-%M-%S)}
export ARENA_LOG_RUN
printf '%s\n' "$ARENA_LOG_RUN" >"$run_file"
bash deploy/compose.sh --demo up -d --remove-orphans
if ! uv run --frozen python scripts/demo_follow.py wait --green "$green" --purple "$purple" --timeout 180; then
  bash deploy/compose.sh --demo ps || true
  bash deploy/compose.sh --demo logs --tail 40 green purple || true
  fail 1 "green and purple did not both answer /healthz"
fi

step "Run task arvo:$task: POST $green/tasks" \
  "the task's error is above; green's own lines: bash deploy/compose.sh logs green"
rc=0
GREEN_API_TOKEN_FILE=$ARENA_TOKEN_DIR/operator-token \
  uv run --frozen python scripts/demo_follow.py run --green "$green" --task "arvo:$task" || rc=$?
uv run --frozen python - "$task" <<'PY' || true
import sys, textwrap
from fixtures.catalog import get_task
t = get_task(sys.argv[1])
kind = t.crash_type.replace("-", " ")
print(f"\nAbout arvo:{t.id} ({t.project}, a {kind}): it crashes in {t.crash_file}:{t.crash_function};"
      f" the developer fix is in {t.fix_file}:{t.fix_function}.")
print(textwrap.fill(t.description, 100))
PY

step "Done in $(( $(date +%s) - t0 )) s. The stack keeps running:"
printf '\n  %sDashboard: %s/ui%s   (log in with data/compose/operator-token; docs/dashboard.md)\n\n' "$bold" "$green" "$off"
cat <<EOF
  The operator token (the REST API and A2A task intake need it) is in data/compose/operator-token:
  auth="Authorization: Bearer \$(cat data/compose/operator-token)"
  curl -s -H "\$auth" $green/tasks | python3 -m json.tool        # every task
  curl -s -H "\$auth" -X POST $green/tasks -H 'content-type: application/json' \\
       -d '{"task": "arvo:$task"}'                           # another run
  curl -s -H "\$auth" $green/tasks/<id>              # status, steps, scores, ground truth
  curl -s -H "\$auth" $green/tasks/<id>/commands     # what the agent ran, with output
  curl -s $green/.well-known/agent-card.json          # green's A2A agent card
  curl -s $purple/healthz                             # purple's policy
  $green/docs                                      # the REST API (OpenAPI)
  logs/green/$ARENA_LOG_RUN/arvo_$task.log   # green's lines about the task
  logs/purple/$ARENA_LOG_RUN/task_<id>.log   # purple's (it never learns the bug id)
  bash deploy/compose.sh ps                           # the stack (also: logs -f green)
  uv run python -m fixtures.build                     # every bundled task: arvo:900001..900014,
                                                      # and 900901, 900902 (broken on purpose)
  make down                                           # stop it; its tasks, runs and scores are kept
  make clean                                          # stop it and DELETE its volumes (every result)
EOF
if [ "$rc" != 0 ]; then
  printf '\n%sthe demo task did not complete%s (exit status %d): its error is printed above;' "$red" "$off" "$rc" >&2
  printf ' green says more in: bash deploy/compose.sh logs green\n' >&2
fi
exit "$rc"
