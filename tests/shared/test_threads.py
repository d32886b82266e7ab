"""A started pool has all its threads from the start, and never more."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from services.shared.threads import start_default_pool, started_pool


def _named(prefix: str) -> int:
    return sum(t.name.startswith(f"{prefix}_") for t in threading.enumerate())


def test_every_thread_runs_when_the_pool_is_returned_and_a_backlog_adds_none() -> None:
    pool = started_pool(5, "test-started")
    try:
        assert _named("test-started") == 5
        # a backlog deeper than the pool: a lazily started pool grew to its bound here
        futures = [pool.submit(time.sleep, 0.01) for _ in range(50)]
        for f in futures:
            f.result()
        assert _named("test-started") == 5
        assert pool.submit(sum, [1, 2]).result() == 3
    finally:
        pool.shutdown(wait=True)
    assert _named("test-started") == 0


async def test_the_loops_default_pool_is_started_at_asyncios_own_size() -> None:
    before = set(threading.enumerate())
    start_default_pool()
    started = [t.name for t in set(threading.enumerate()) - before]
    assert sorted(started) == sorted(f"asyncio_{i}" for i in range(len(started)))
    assert len(started) == min(32, (os.cpu_count() or 1) + 4)
    await asyncio.gather(*(asyncio.to_thread(time.sleep, 0.01) for _ in range(40)))
    assert {t.name for t in set(threading.enumerate()) - before} == set(started)
