#!/usr/bin/env bash
# Everything a fresh machine needs before the demo or the tests: the Docker engine and compose,
# uv and the locked Python environment (with the postgres extra), Debian's chromium (browser tests),
# postgresql (the store and API tests also run on a private PostgreSQL cluster) and docker-registry
# (engine-pool tests), btrfs-progs (disk-cap tests), the base images and the fixture tasks (ARVO-shaped and
# SWE-bench-shaped), and the local Python base image (the service images' FROM when no registry
# answers; the disk-quota tests run in it). Idempotent: a second run with nothing changed takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/ensure-env.sh
bash scripts/ensure-chromium.sh   # the dashboard's browser tests (tests/ui/)
bash scripts/ensure-postgres.sh   # the PostgreSQL half of the store and API tests
bash scripts/ensure-registry.sh   # the engine-pool tests' local registry and openssl (docs/engines.md)
bash scripts/ensure-btrfs.sh      # the disk-cap tests' btrfs engine (btrfs-progs; docs/engines.md)
uv run --frozen python -m fixtures.build "$@"
uv run --frozen python -m fixtures.swebench.build
bash images/python-base.sh        # arena/python-base:3.11-bookworm (cached by its recipe)
# pytest's own bytecode. pytest rewrites the asserts of every test module as it imports it and
# caches the result beside the module's bytecode, but not where PYTHONDONTWRITEBYTECODE is set:
# then each xdist worker rewrote every test module from source (8.5 s of CPU to collect the suite,
# 4.5 s from the cache). One collection with writing on fills that cache; a module edited later is
# rewritten in memory. Without the variable the workers keep the cache themselves. A collection
# error is left for the test run itself to report.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
  env -u PYTHONDONTWRITEBYTECODE uv run --frozen --extra postgres \
    pytest --collect-only -q -p no:cacheprovider >/dev/null 2>&1 || true
fi
