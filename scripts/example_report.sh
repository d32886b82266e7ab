#!/usr/bin/env bash
# Regenerate docs/example-report/: the twelve bundled C locate tasks (arvo:900001-900012) run by
# the offline stack-trace analyst (run fixtures-analyst) and by a deliberately weak scripted
# purple (run fixtures-weak: it runs `ls` and names files that are never the fix), then
# `arena compare` of the two.
#
# Starts on 127.0.0.1: one green (SQLite, the assets under build/assets, the images
# arena/arvo:<id>-vul: build them first with `uv run python -m fixtures.build`), a purple with
# PURPLE_POLICY=stacktrace, and the weak purple (the tests' scripted purple). Everything they
# write goes to build/example-report/ (databases, logs, results/<run>/, results/compare/);
# report.md, manifest.json and scores.png of the analyst's run and compare.md and compare.png are
# then copied into docs/example-report/. The services are stopped at the end.
#
# Environment: ARENA_ASSETS (default build/assets), ARENA_WORK (default build/example-report).
set -Eeuo pipefail
cd "$(dirname "$0")/.."

assets=$(realpath "${ARENA_ASSETS:-build/assets}")
rel=${ARENA_WORK:-build/example-report}
rm -rf "$rel" && mkdir -p "$rel"
work=$(realpath "$rel")
tasks=(900001 900002 900003 900004 900005 900006 900007 900008 900009 900010 900011 900012)
free_port() { uv run --frozen python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
green_port=$(free_port) analyst_port=$(free_port) weak_port=$(free_port)
export ARENA_API_TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT

GREEN_API_TOKEN=$ARENA_API_TOKEN GREEN_ASSET_SOURCE=$assets \
  GREEN_IMAGE_TEMPLATE='arena/arvo:{id}-vul' GREEN_FIX_IMAGE_TEMPLATE='arena/arvo:{id}-fix' \
  GREEN_DATABASE_URL="sqlite:///$work/green.db" GREEN_ASSET_CACHE_DIR="$work/cache" \
  GREEN_LOG_DIR="$work/logs" GREEN_PURPLE_ALLOWLIST='["http://127.0.0.1:*"]' \
  uv run --frozen python -m services.green --port "$green_port" >"$work/green.log" 2>&1 &
pids+=($!)
PURPLE_POLICY=stacktrace \
  PURPLE_LOG_DIR="$work/logs" PURPLE_TRAJECTORY_DIR="$work/traj-analyst" \
  uv run --frozen python -m services.purple --port "$analyst_port" >"$work/analyst.log" 2>&1 &
pids+=($!)
PURPLE_PORT=$weak_port PURPLE_LOG_DIR="$work/logs" \
  PURPLE_TRAJECTORY_DIR="$work/traj-weak" uv run --frozen python - >"$work/weak.log" 2>&1 <<'EOF' &
import uvicorn

from services.purple.app import create_app
from services.purple.config import PurpleSettings
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy

wrong = ["src/lexer.c", "src/colormap.c", "lib/header.c"]  # valid files, never the fix
script = Script(
    commands=["ls"],
    submissions=[{"locations": [{"file": f, "line_start": 1, "line_end": 1}]} for f in wrong],
)
settings = PurpleSettings()  # PURPLE_PORT: the port its card advertises too
app = create_app(settings, make_policy=lambda kind="rca_task": ScriptedPolicy(script, Observed()))
uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
EOF
pids+=($!)

for port in "$green_port" "$analyst_port" "$weak_port"; do
  timeout 120 bash -c "until curl -sf http://127.0.0.1:$port/.well-known/agent-card.json >/dev/null; do sleep 1; done"
done

green=http://127.0.0.1:$green_port
for run in analyst:$analyst_port weak:$weak_port; do
  uv run --frozen arena run "${tasks[@]}" --green "$green" --purple "http://127.0.0.1:${run#*:}" \
    --run "fixtures-${run%%:*}" --out "$rel/results" --poll-interval 0.5
done
uv run --frozen arena compare "$work/results/fixtures-analyst" "$work/results/fixtures-weak" \
  --out "$work/results/compare"

out=docs/example-report
cp "$work"/results/fixtures-analyst/{manifest.json,scores.png} "$out/"
# report.md as arena report wrote it, with one line under its title saying how it was made
sed '1a\\n_Regenerated with `scripts/example_report.sh`: a green and both purples on 127.0.0.1, both runs, `arena compare`._' \
  "$work/results/fixtures-analyst/report.md" >"$out/report.md"
cp "$work"/results/compare/{compare.md,compare.png} "$out/compare/"
echo "written: $out/{report.md,manifest.json,scores.png}, $out/compare/{compare.md,compare.png}"
