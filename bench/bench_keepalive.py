"""Benchmark: green's answers on a kept-alive connection vs on a new connection each.

In one run, against one green process (SQLite, one slot, the offline analyst's purple): ``POST
/tasks`` and ``GET /tasks`` one after another, ``--requests`` of each,

  * the baseline: each request on a connection of its own (a bare HTTP/1.1 client, closed after
    the answer);
  * kept alive: all of them over one ``httpx.AsyncClient``, as ``arena run`` and purple's A2A
    client talk to green.

With Nagle's algorithm on green's connections, an answer written in two parts (headers, then
body) waited on a kept-alive connection for the client's delayed ACK: about 40 ms each.

    uv run --frozen python -m bench.bench_keepalive [--requests 100]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench.stack import (
    AUTH,
    IDS,
    bare_request,
    percentiles,
    post_steadily,
    start_green,
    start_purple,
)


async def kept_alive_gets(url: str, n: int) -> list[float]:
    out = []
    async with httpx.AsyncClient(headers=AUTH, timeout=30) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            r = await client.get(f"{url}/tasks", params={"limit": 1})
            out.append(time.perf_counter() - t0)
            r.raise_for_status()
    return out


async def fresh_gets(url: str, n: int) -> list[float]:
    host, port = url.removeprefix("http://").split(":")
    out = []
    for _ in range(n):
        status, answer, seconds = await bare_request(host, int(port), "GET", "/tasks?limit=1")
        assert b" 200 " in status, (status, answer[:200])
        out.append(seconds)
    return out


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-keepalive-"))
    purple = start_purple(tmp)
    green = start_green(
        tmp, f"sqlite:///{tmp}/green.db", "keepalive", purple.url, 1, GREEN_MAX_QUEUED_TASKS="5000"
    )
    refs = [IDS[i % len(IDS)] for i in range(args.requests)]
    try:
        asyncio.run(post_steadily(green.url, refs[:5], clients=1))  # warm both paths
        figures = {how: {"POST": [], "GET": []} for how in ("new", "kept")}
        for _ in range(2):  # alternated in two rounds, pooled
            for how in ("new", "kept"):
                fresh = how == "new"
                _, posts = asyncio.run(post_steadily(green.url, refs, clients=1, fresh=fresh))
                gets = asyncio.run((fresh_gets if fresh else kept_alive_gets)(green.url, len(refs)))
                figures[how]["POST"] += posts
                figures[how]["GET"] += gets
    finally:
        green.stop()
        purple.stop()
    for verb in ("POST", "GET"):
        new, kept = figures["new"][verb], figures["kept"][verb]
        ratio = sorted(kept)[len(kept) // 2] / sorted(new)[len(new) // 2]
        print(
            f"{verb} /tasks, one client: a new connection each {percentiles(new)}; "
            f"kept alive {percentiles(kept)} (p50 ratio kept/new = {ratio:.2f})"
        )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=100, help="of each verb, per round")
    return run(p.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
