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
# The stack keeps running afterwards; `make down` stops it. No API key is needed: purple then
# runs its offline stack-trace analyst. With OPENAI_API_KEY (and optionally OPENAI_BASE_URL,
# PURPLE_MODEL) in the environment or in .env, the same command runs the LLM agent.
#
# Environment: ARENA_DEMO_TASK (default 900007), ARENA_GREEN_PORT / ARENA_PURPLE_PORT (host
# ports, default 9009 / 9019), PYTHON_IMAGE (base image), ARENA_COMPOSE (force a compose).
set -euo pipefail
cd "$(dirname "$0")/.."

task=${ARENA_DEMO_TASK:-900007}
export ARENA_GREEN_PORT=${ARENA_GREEN_PORT:-9009}
export ARENA_PURPLE_PORT=${ARENA_PURPLE_PORT:-9019}
export PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11-slim-bookworm}
green=http://127.0.0.1:$ARENA_GREEN_PORT
purple=http://127.0.0.1:$ARENA_PURPLE_PORT
t0=$(date +%s)
t_step=
if [ -t 1 ]; then bold=$'\033[1m' blue=$'\033[1;34m' off=$'\033[0m'; else bold='' blue='' off=''; fi

step() {
  local now
  now=$(date +%s)
  [ -z "$t_step" ] || printf '    (%d s)\n' $((now - t_step))
  t_step=$now
  printf '\n%s==>%s %s%s%s\n' "$blue" "$off" "$bold" "$*" "$off"
}

step "Docker engine and compose, uv and the locked Python environment"
source scripts/ensure-env.sh
bash deploy/compose.sh version | head -1
uv --version

step "Demo task arvo:$task (ARVO-shaped fixture: image arena/arvo:$task-vul, build/assets/$task)"
uv run --frozen python -m fixtures.build --only "$task"

step "Python base image $PYTHON_IMAGE"
if docker image inspect "$PYTHON_IMAGE" >/dev/null 2>&1; then
  echo "present"
elif docker pull -q "$PYTHON_IMAGE" 2>/dev/null; then
  echo "pulled"
else
  echo "no registry answers: building a local stand-in from Debian packages"
  bash images/python-base.sh "$PYTHON_IMAGE"
fi

step "Build the service images (deploy/Dockerfile)"
mkdir -p build logs data/compose
# The services run as uid 10001; the demo's logs go to ./logs on this machine, and green keeps
# its operator token in data/compose/operator-token (mode 0600), where the demo client reads it.
if [ "$(id -u)" = 0 ]; then chown 10001:10001 logs data/compose; else chmod a+rwx logs data/compose; fi
build_log=build/demo-compose-build.log
if ! bash deploy/compose.sh --demo build >"$build_log" 2>&1; then
  tail -40 "$build_log"
  echo "image build failed; the whole output is in $build_log" >&2
  exit 1
fi
for image in "${ARENA_GREEN_IMAGE:-arena/green:latest}" "${ARENA_PURPLE_IMAGE:-arena/purple:latest}"; do
  docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' "$image"
done

step "Start green + purple (docker compose, project 'arena')"
ARENA_LOG_RUN=log_$(date -u +%Y-%m-%d_%H-%M-%S)
export ARENA_LOG_RUN
bash deploy/compose.sh --demo up -d --remove-orphans
if ! uv run --frozen python scripts/demo_follow.py wait --green "$green" --purple "$purple" --timeout 180; then
  bash deploy/compose.sh --demo ps
  bash deploy/compose.sh --demo logs --tail 40 green purple
  exit 1
fi

step "Run task arvo:$task: POST $green/tasks"
rc=0
GREEN_API_TOKEN_FILE=data/compose/operator-token \
  uv run --frozen python scripts/demo_follow.py run --green "$green" --task "arvo:$task" || rc=$?
uv run --frozen python - "$task" <<'PY' || true
import sys, textwrap
from fixtures.catalog import get_task
t = get_task(sys.argv[1])
print(f"\nAbout arvo:{t.id} ({t.project}, {t.bug_class}): it crashes in {t.crash_file}:{t.crash_function};"
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
  logs/$ARENA_LOG_RUN/arvo_$task.log         # green's lines about the task
  logs/$ARENA_LOG_RUN/task_<id>.log          # purple's (it never learns the bug id)
  bash deploy/compose.sh ps                           # the stack (also: logs -f green)
  uv run python -m fixtures.build                     # the other demo tasks, arvo:900001..12
  make down   (= bash deploy/compose.sh down -v)      # stop it and remove its volumes
EOF
exit "$rc"
