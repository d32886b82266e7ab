"""Thread pools whose threads all start with the pool.

``ThreadPoolExecutor`` starts a thread only when work finds none idle, and keeps it for good.
A pool therefore grows to the deepest backlog it has met: a database outage or an engine that
answers slowly leaves the process with more threads than before, and from outside that is
indistinguishable from a leak. A pool from :func:`started_pool` has every thread from the start:
the process's thread count is fixed by its settings, a host that cannot give it that many
threads refuses at start and not in the middle of a run, and any thread beyond the count is one
that something leaked.
"""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor

START_WITHIN_S = 30.0
"""How long the pool's threads may take to start (the host is out of threads past that)."""


def started_pool(workers: int, name: str) -> ThreadPoolExecutor:
    """A ``ThreadPoolExecutor`` of ``workers`` threads named ``name_<n>``, all running when it
    returns. Each thread is made to wait at a barrier that this call passes last, so no thread
    is idle (and reused) before the pool has started all of them."""
    pool = ThreadPoolExecutor(workers, thread_name_prefix=name)
    gate = threading.Barrier(workers + 1, timeout=START_WITHIN_S)
    try:
        for _ in range(workers):
            pool.submit(gate.wait)  # raises when the host has no thread left to give
        gate.wait()
    except (RuntimeError, threading.BrokenBarrierError) as exc:
        gate.abort()  # the threads started so far are let go
        pool.shutdown(wait=False, cancel_futures=True)
        raise RuntimeError(f"{name}: {workers} threads could not be started: {exc}") from exc
    return pool


def start_default_pool() -> None:
    """Give the running loop a started default executor (``asyncio.to_thread``'s threads), of
    the size asyncio itself would give it."""
    workers = min(32, (os.cpu_count() or 1) + 4)
    asyncio.get_running_loop().set_default_executor(started_pool(workers, "asyncio"))
