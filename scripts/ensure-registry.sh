#!/usr/bin/env bash
# Make sure Debian's docker-registry (a real Docker Distribution server) is installed for the
# engine-pool tests (tests/sandbox/test_engine_pool.py, tests/integration/test_engine_pool_green.py),
# which start it on 127.0.0.1 with a config of their own. The package's own service is not used
# (and stopped if the install started it). Idempotent.
set -euo pipefail

if command -v docker-registry >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "docker-registry is missing and this user cannot install it: apt-get install docker-registry" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing docker-registry (Debian's package)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker-registry 2>/dev/null; then
  $SUDO systemctl stop docker-registry || true
fi
echo "docker-registry $(docker-registry --version 2>/dev/null | awk '{print $NF}') is installed"
