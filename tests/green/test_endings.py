"""services/green/tasks/endings.py on a real SQLite file another connection locks: a task's end whose
first attempt outlived its deadline (it waits for the lock in its thread) is written once, and
taken for this replica's own end.

Before, the retry wrote the end again beside the attempt still under way; once the lock went, the
first landed and the retry found the task no longer held, so the replica took its own end for
another replica's takeover (``task.lease_lost``) and never published the task's final status.
"""

from __future__ import annotations

import asyncio

from services.green.store.models import TaskStatus, utcnow
from services.green.tasks.endings import Endings
from services.green.tasks.live_task import LiveTask
from tests.green.conftest import OWNER
from tests.green.test_offloop import _locked


async def test_an_end_still_waiting_for_a_lock_is_written_once_and_known_as_this_replicas(
    running_task_store, impatient_db
):
    store, db = running_task_store, impatient_db
    live = LiveTask(row=store.get("t001"), kind=None, token="token")  # type: ignore[arg-type]
    heard: asyncio.Queue = asyncio.Queue()
    live.subscribers.append(heard)
    endings = Endings(store, db, OWNER)
    holder = _locked(store)
    try:
        outcome = live.outcome(TaskStatus.completed, "submitted")
        assert not await endings.end(live, outcome, {"finished_at": utcnow()})
        assert live.id in endings  # retried in the background
        await asyncio.sleep(1.0)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with asyncio.timeout(30):
        while live.id in endings:
            await asyncio.sleep(0.05)

    assert not live.lost
    assert live.status == TaskStatus.completed
    assert (await heard.get()).status == TaskStatus.completed
    assert store.get("t001").status == TaskStatus.completed
