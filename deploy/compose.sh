#!/usr/bin/env bash
# docker compose for the arena, with the project's defaults, on Compose v2 or v1:
#   - `docker compose` (v2) when present, else `docker-compose` (v1.29, Debian's package);
#     ARENA_COMPOSE="docker-compose" (or "docker compose") forces one;
#   - project name ${COMPOSE_PROJECT_NAME:-arena}; deploy/docker-compose.yml, plus the offline
#     demo overlay deploy/docker-compose.demo.yml with --demo;
#   - the repository's .env as the variables file when it exists (ARENA_ENV_FILE names another;
#     ARENA_ENV_FILE= (empty) uses none);
#   - DOCKER_GID from the Docker socket, so that green (uid 10001) may use it;
#   - COMPOSE_PROJECT_NAME exported: it is green's instance name (GREEN_INSTANCE_NAME).
#
# usage: deploy/compose.sh [--demo] COMPOSE-COMMAND [ARGS...]
#   e.g. deploy/compose.sh --demo up -d --build;  deploy/compose.sh logs -f green;
#        deploy/compose.sh down -v
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

files=(-f "$here/docker-compose.yml")
if [ "${1:-}" = --demo ]; then
  files+=(-f "$here/docker-compose.demo.yml")
  shift
fi

if [ -n "${ARENA_COMPOSE:-}" ]; then
  read -r -a compose <<<"$ARENA_COMPOSE"
elif docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  echo "compose.sh: neither 'docker compose' nor 'docker-compose' is installed" \
       "(Debian: apt-get install docker-compose)" >&2
  exit 1
fi

sock=${DOCKER_SOCKET:-/var/run/docker.sock}
if [ -z "${DOCKER_GID:-}" ] && [ -S "$sock" ]; then
  DOCKER_GID=$(stat -c %g "$sock")
  export DOCKER_GID
fi

env_file=()
if [ -z "${ARENA_ENV_FILE+set}" ]; then
  [ -f "$root/.env" ] && env_file=(--env-file "$root/.env")
elif [ -n "$ARENA_ENV_FILE" ]; then
  env_file=(--env-file "$ARENA_ENV_FILE")
fi

# The checkout the images are built from, recorded in them (services/shared/build_info.py, the
# same rule): its commit, and dirty when a tracked file changed or untracked code lies in
# services/. Not a checkout, or no git: empty (unknown). Set ARENA_COMMIT to name another.
if [ -z "${ARENA_COMMIT+set}" ]; then
  ARENA_COMMIT= ARENA_DIRTY=
  if [ "$(git -C "$root" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$root" && pwd -P)" ]; then
    ARENA_COMMIT=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
    if changed=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) \
       && code=$(git -C "$root" status --porcelain --untracked-files=all -- services 2>/dev/null); then
      ARENA_DIRTY=false
      [ -n "$changed$code" ] && ARENA_DIRTY=true
    fi
  fi
  export ARENA_COMMIT ARENA_DIRTY
fi

# The project name also names green's instance (GREEN_INSTANCE_NAME: the owner label of its task
# containers), so each project reaps only its own containers.
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-arena}
# Green's card advertises the host port it is published on (compose v1 has no nested defaults).
export ARENA_GREEN_CARD_URL=${ARENA_GREEN_CARD_URL:-http://localhost:${ARENA_GREEN_PORT:-9009}}
exec "${compose[@]}" -p "$COMPOSE_PROJECT_NAME" "${env_file[@]}" "${files[@]}" "$@"
