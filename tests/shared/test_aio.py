"""Cancellation that is never lost (services/shared/aio.py), against the ways a cancel is lost."""

from __future__ import annotations

import asyncio
import sys

import pytest

from services.shared.aio import cancel_and_wait, through_cancels


async def _poller(futures: list[asyncio.Future[int]]) -> None:
    """Waits on one future after another through ``asyncio.wait_for``, as a poll loop does."""
    loop = asyncio.get_running_loop()
    while True:
        futures.append(loop.create_future())
        await asyncio.wait_for(futures[-1], 10)


async def _started(futures: list[asyncio.Future[int]]) -> asyncio.Task[None]:
    task = asyncio.create_task(_poller(futures))
    while not futures:
        await asyncio.sleep(0)
    return task


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="asyncio.wait_for was fixed in 3.12")
async def test_python_311_wait_for_loses_a_cancel_that_meets_its_result() -> None:
    """Why the services never use asyncio.wait_for: the bug this module guards against."""
    futures: list[asyncio.Future[int]] = []
    task = await _started(futures)
    futures[-1].set_result(1)  # the poll's answer arrives...
    task.cancel()  # ...in the same loop turn as the cancel
    done, _ = await asyncio.wait({task}, timeout=0.5)
    assert not done, "the cancel was delivered after all"
    assert len(futures) == 2  # the poller went on to its next poll
    task.cancel()
    await asyncio.wait({task})


async def test_cancel_and_wait_ends_a_task_whose_cancel_met_its_result() -> None:
    futures: list[asyncio.Future[int]] = []
    task = await _started(futures)
    futures[-1].set_result(1)
    async with asyncio.timeout(10):  # a single cancel would wait forever on 3.11
        await cancel_and_wait(task, again_after_s=0.05)
    assert task.cancelled()


async def test_cancel_and_wait_ends_a_task_that_swallows_cancels() -> None:
    swallowed = 0

    async def stubborn() -> str:
        nonlocal swallowed
        while swallowed < 3:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                swallowed += 1
        return "ended on its own terms"

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    async with asyncio.timeout(10):
        await cancel_and_wait(task, again_after_s=0.05)
    assert swallowed == 3 and task.result() == "ended on its own terms"
    await cancel_and_wait(task)  # an ended task: nothing to do


async def test_through_cancels_finishes_its_work_however_often_the_caller_is_cancelled() -> None:
    finished: list[str] = []

    async def cleanup() -> str:
        await asyncio.sleep(0.2)
        finished.append("cleanup")
        return "done"

    async def runner() -> str:
        return await through_cancels(cleanup())

    task = asyncio.create_task(runner())
    for _ in range(5):
        await asyncio.sleep(0.01)
        task.cancel()
    assert await task == "done" and finished == ["cleanup"]
