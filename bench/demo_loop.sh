#!/usr/bin/env bash
# `make demo` many times in a row, stopping at the first failure: the demo's robustness check.
#
#   bash bench/demo_loop.sh [N] [--load]      # N runs (default 30) of scripts/demo.sh
#
# --load keeps every core busy while the loop runs (one `yes >/dev/null` per core, started and
# stopped by this script, by their ids), so the demo is tried on a loaded machine. Per run: the
# exit status, the time, and whether green's container was recreated (a second `make demo` must
# leave a running stack alone). Each run's output goes to build/demo-loop/run-<i>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30}
load=0
[ "${2:-}" = --load ] && load=1
out=build/demo-loop
mkdir -p "$out"
burners=()
stop_load() { for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_load EXIT
if [ "$load" = 1 ]; then
  for _ in $(seq 1 "$(nproc)"); do
    yes >/dev/null &
    burners+=($!)
  done
  echo "load: ${#burners[@]} x 'yes >/dev/null' (pids ${burners[*]})"
fi
green_id() { docker ps -q --filter label=com.docker.compose.project=arena --filter label=com.docker.compose.service=green; }
ok=0 recreated=0
for i in $(seq 1 "$n"); do
  before=$(green_id)
  t0=$(date +%s)
  rc=0
  bash scripts/demo.sh >"$out/run-$i.log" 2>&1 </dev/null || rc=$?
  secs=$(( $(date +%s) - t0 ))
  after=$(green_id)
  note=""
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    note="green recreated"
    [ "$i" = 1 ] || recreated=$((recreated + 1))  # the first run may replace another checkout's stack
  fi
  printf 'run %2d/%d: exit %d in %3d s %s\n' "$i" "$n" "$rc" "$secs" "$note"
  if [ "$rc" != 0 ]; then
    tail -30 "$out/run-$i.log"
    echo "FAILED at run $i of $n (after $ok successes); its output: $out/run-$i.log"
    exit 1
  fi
  ok=$((ok + 1))
done
echo "$ok of $n runs succeeded; green recreated by $recreated of the runs after the first"
