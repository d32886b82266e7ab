#!/usr/bin/env bash
# Make sure Debian's PostgreSQL server programs (initdb, pg_ctl) are installed: the test suite
# starts its own private cluster with them (tests/support/postgres.py) to run the store and API
# tests on PostgreSQL as well as SQLite. Idempotent; no server is started or enabled here.
set -euo pipefail

if command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "PostgreSQL is missing and this user cannot install it: apt-get install postgresql" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing postgresql (Debian's package)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
echo "$(ls -d /usr/lib/postgresql/*/bin | tail -1)/postgres is installed"
