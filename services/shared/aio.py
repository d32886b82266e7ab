"""Cancellation that is never lost: stop tasks for sure, and finish work through cancels.

A single ``Task.cancel()`` can be swallowed. Python 3.11's ``asyncio.wait_for`` returns its inner
result when that result arrives in the same loop turn as the cancel (fixed in 3.12), and a
library may catch ``CancelledError`` by mistake. The task then runs on as if nothing had happened,
and whoever awaits its end waits forever. So the services use ``asyncio.timeout`` rather than
``asyncio.wait_for`` (scripts/check_layout.py enforces it), and stop tasks with
:func:`cancel_and_wait`, which cancels again until the task has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

AGAIN_AFTER_S = 1.0
"""How long a cancelled task may take to end before it is cancelled again."""


async def cancel_and_wait(*tasks: asyncio.Task[Any], again_after_s: float = AGAIN_AFTER_S) -> None:
    """Cancel ``tasks`` and wait until every one has ended, cancelling again any that is still
    running ``again_after_s`` later (its first cancel was swallowed). Their results and errors
    are left to them; cancelling the caller cancels the wait, not the tasks' ending."""
    pending = {t for t in tasks if not t.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=again_after_s)


async def through_cancels(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if the awaiting task is cancelled meanwhile (cleanup and
    final records that must happen whatever interrupts them)."""
    future = asyncio.ensure_future(work)
    while not future.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(future)
    return future.result()
