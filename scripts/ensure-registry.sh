#!/usr/bin/env bash
# Make sure the engine-pool tests (tests/sandbox/test_engine_pool.py,
# tests/integration/test_engine_pool_green.py) have what they start on 127.0.0.1: Debian's
# docker-registry (a real Docker Distribution server, run with a config of their own; the
# package's own service is not used, and stopped if the install started it) and openssl (the
# certificates of the engine they reach over tcp:// with mutual TLS). Idempotent.
set -euo pipefail

missing=()
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} = 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "${missing[*]} missing and this user cannot install them: apt-get install ${missing[*]}" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing ${missing[*]} (Debian's packages)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker-registry 2>/dev/null; then
  $SUDO systemctl stop docker-registry || true
fi
echo "docker-registry $(docker-registry --version 2>/dev/null | awk '{print $NF}') and $(openssl version | awk '{print $1, $2}') are installed"
