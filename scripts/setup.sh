#!/usr/bin/env bash
# Everything a fresh machine needs before the demo or the tests:
# the Docker engine, the Python environment (locked), the base image and the fixture tasks.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-docker.sh
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --frozen --quiet
uv run --frozen python -m fixtures.build "$@"
