#!/usr/bin/env bash
# Everything a fresh machine needs before the demo or the tests: the Docker engine and compose,
# uv and the locked Python environment, the base images and the fixture tasks (ARVO-shaped and
# SWE-bench-shaped). Idempotent: a second run with nothing changed takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-docker.sh
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  echo "installing docker-compose (Debian's package)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq docker-compose >/dev/null
fi
if ! command -v uv >/dev/null 2>&1; then
  # Debian's system Python refuses pip installs (PEP 668) unless told otherwise.
  python3 -m pip install -q uv 2>/dev/null || python3 -m pip install -q --break-system-packages uv
  export PATH="$HOME/.local/bin:$PATH"
fi
uv sync --frozen --quiet
uv run --frozen python -m fixtures.build "$@"
uv run --frozen python -m fixtures.swebench.build
