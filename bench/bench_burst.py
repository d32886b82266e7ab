"""Benchmark: a burst of tasks posted at once to one green, whatever its slot setting.

In one run, against one green process (SQLite) and one purple process (the offline analyst), on
the bundled fixture tasks and this machine's Docker engine:

  * the baseline: ``POST /tasks`` on an idle green, one task at a time (each waited for);
  * intake while tasks start: ``--at-once`` tasks (default 64) posted together, then, while they
    start, ``--probes`` more posted by four clients one after another (as ``arena run`` posts):
    their ``POST /tasks`` p50/p95 and the p95's ratio to the baseline's p50 (goal: p95 < 50 ms),
    on connections kept alive as ``arena run``'s client keeps them (``--fresh``: one each).
    The 64 posted together are timed too: they arrive in the same instant and are answered
    together, so their figure is the time green takes to take in the whole batch;
  * the burst: ``--tasks`` tasks (default 256) posted together to a green with ``--slots``
    slots (default 256): how they ended (completed, failed as infra or as the agent's), the
    containers left and the time until the last ended (goal: every task completed, 0 infra);
  * what a running task costs: ``--hold`` tasks (default 64) kept running by a purple that
    sleeps, then cancelled: green's memory, threads and open files per running task, and the
    memory of their containers (the sizing of docs/scale.md).

    uv run --frozen python -m bench.bench_burst [--tasks 256] [--slots 256] [--at-once 64]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench.stack import (
    AUTH,
    IDS,
    container_memory_mb,
    containers,
    holds,
    p95,
    percentiles,
    post_at_once,
    post_steadily,
    start_green,
    start_purple,
    start_sleeping_purple,
    tasks,
    wait_ended,
    wait_for,
)
from tests.support.servers import ServiceProcess


def _ends(ended: dict[str, dict]) -> collections.Counter[str]:
    return collections.Counter(
        t["status"] if t["status"] != "failed" else f"failed ({t['failure_kind']})"
        for t in ended.values()
    )


def hold(green: ServiceProcess, tmp: Path, n: int) -> None:
    """Keep ``n`` tasks running, measure what they hold, cancel them."""
    sleeping = start_sleeping_purple(tmp)
    try:
        before = holds(green)
        ids, _ = asyncio.run(post_at_once(green.url, IDS[:1] * n, purple_url=sleeping.url))
        wait_for(
            lambda: all(t["status"] == "running" for t in tasks(green.url, set(ids)).values()), 1800
        )
        now, (running, mem) = holds(green), container_memory_mb("burst")
        print(
            f"{running} tasks held running: green {now} (before: {before}), i.e. per task "
            f"{(now.rss_mb - before.rss_mb) / n:.2f} MB, {(now.threads - before.threads) / n:.2f} "
            f"threads, {(now.fds - before.fds) / n:.2f} open files; their containers "
            f"{mem:.0f} MB together, {mem / max(running, 1):.1f} MB each"
        )
        for task_id in ids:
            httpx.post(f"{green.url}/tasks/{task_id}/cancel", headers=AUTH, timeout=60)
        wait_ended(green.url, ids, 600)
    finally:
        sleeping.stop()


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-burst-"))
    purple = start_purple(tmp)
    green = start_green(tmp, f"sqlite:///{tmp}/green.db", "burst", purple.url, args.slots)
    try:
        print(f"green: {args.slots} slots, SQLite; load before: {os.getloadavg()[0]:.2f}")
        idle = []
        for i in range(args.baseline):
            ids, seconds = asyncio.run(post_at_once(green.url, [IDS[i % len(IDS)]]))
            idle += seconds
            wait_ended(green.url, ids, 120)
        print(f"baseline, one POST /tasks at a time on an idle green: {percentiles(idle)}")

        refs = [IDS[i % len(IDS)] for i in range(args.at_once)]
        ids, seconds = asyncio.run(post_at_once(green.url, refs))
        print(f"{args.at_once} POST /tasks at once (the batch): {percentiles(seconds)}")
        probes = [IDS[i % len(IDS)] for i in range(args.probes)]
        more, seconds = asyncio.run(post_steadily(green.url, probes, fresh=args.fresh))
        ratio = p95(seconds) / sorted(idle)[len(idle) // 2]
        how = "a new connection each" if args.fresh else "connections kept alive, as arena run"
        print(
            f"{args.probes} POST /tasks by 4 clients ({how}) while the {args.at_once} start: "
            f"{percentiles(seconds)} (p95 / baseline p50 = {ratio:.1f})"
        )
        wait_ended(green.url, ids + more, 1800)

        refs = [IDS[i % len(IDS)] for i in range(args.tasks)]
        t0 = time.monotonic()
        ids, seconds = asyncio.run(post_at_once(green.url, refs))
        print(f"burst of {args.tasks} POST /tasks at once: {percentiles(seconds)}")
        ended = wait_ended(green.url, ids, args.timeout)
        took = time.monotonic() - t0
        if args.hold:
            hold(green, tmp, args.hold)
    finally:
        green.stop()
        purple.stop()
    ends = _ends(ended)
    left = containers("burst")
    print(f"burst ended after {took:.0f} s: {dict(ends)}; containers left: {len(left)}")
    ok = ends.get("completed", 0) == args.tasks and not left
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=256)
    p.add_argument("--slots", type=int, default=256)
    p.add_argument("--at-once", type=int, default=64)
    p.add_argument("--baseline", type=int, default=10, help="idle POSTs for the baseline")
    p.add_argument("--probes", type=int, default=40, help="POSTs while the batch starts")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="the probes open a connection each (the accept and close count), not kept alive",
    )
    p.add_argument("--hold", type=int, default=64, help="tasks kept running for the sizing")
    p.add_argument("--timeout", type=float, default=3600)
    return run(p.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
