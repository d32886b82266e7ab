# Sourced (it may put uv on the caller's PATH) by scripts/setup.sh and scripts/demo.sh: what
# both need on a fresh machine. The Docker engine (scripts/ensure-docker.sh) and compose (v2, or
# Debian's v1), uv, and the locked Python environment (with the postgres extra). Idempotent: seconds when all is there.

bash "$(dirname "${BASH_SOURCE[0]}")/ensure-docker.sh"
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  echo "installing docker-compose (Debian's package)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq docker-compose >/dev/null
fi
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip --version >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null; }
  # Debian's system Python refuses pip installs (PEP 668) unless told otherwise.
  python3 -m pip install -q uv 2>/dev/null || python3 -m pip install -q --break-system-packages uv
  export PATH="$HOME/.local/bin:$PATH"
fi
uv sync --frozen --quiet --extra postgres --compile-bytecode   # psycopg: GREEN_DATABASE_URL=postgresql+psycopg://...
# Bytecode for our own modules too. Python reads .pyc files even where PYTHONDONTWRITEBYTECODE is
# set (as on many CI machines and images), but then never writes them: without this step every
# green, purple and pytest process would compile about a thousand modules from source at start
# (3.2 s of CPU for green's import instead of 1.3 s). A module edited later is compiled in memory.
uv run --frozen python -m compileall -q services tests bench fixtures scripts
