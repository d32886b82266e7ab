"""services/green/ledger/task_writes.py on a real SQLite file another connection locks: a running task's
records land once each, in order, however long the lock lasts; past the lease the task ends as
green's failure.

The writer's caller gives up on an attempt after the deadline, but an attempt already under way
(waiting in SQLite's busy handler) cannot be stopped and lands when the lock goes. A writer that
tried again meanwhile recorded the same command twice: the integration test of a 10 s lock
(tests/integration/test_database_lock.py) once found 202 rows for 201 steps.
"""

from __future__ import annotations

import asyncio

from services.green.ledger.task_writes import TaskWrites
from services.green.store.crud import TaskStore
from services.green.store.models import Command
from services.green.store.offloop import Database
from services.green.tasks.end import GreenFault
from services.green.tasks.live_task import LiveTask
from tests.green.conftest import OWNER
from tests.green.test_offloop import _locked


def _writes(store: TaskStore, db: Database, give_up_after_s: float) -> TaskWrites:
    live = LiveTask(row=store.get("t001"), kind=None, token="token")  # type: ignore[arg-type]
    lost: list[LiveTask] = []  # never: these tests' task stays held
    return TaskWrites(live, db, store, OWNER, give_up_after_s=give_up_after_s, on_lost=lost.append)


def _command(seq: int) -> Command:
    return Command(
        task_id="t001",
        seq=seq,
        command=f"echo {seq}",
        exit_code=0,
        duration_s=0.01,
        output=f"{seq}\n",
    )


def _lock_for(store: TaskStore, seconds: float) -> asyncio.Task:
    """Lock the database now; release it ``seconds`` later (the lock's length is the test's)."""
    holder = _locked(store)

    async def release() -> None:
        try:
            await asyncio.sleep(seconds)
        finally:
            holder.execute("ROLLBACK")
            holder.close()

    return asyncio.create_task(release())


async def test_a_lock_longer_than_the_deadline_records_each_command_once_and_in_order(
    running_task_store, impatient_db
):
    store, db = running_task_store, impatient_db
    writes = _writes(store, db, give_up_after_s=30)
    lock = _lock_for(store, 1.5)  # held from here
    for seq in (1, 2, 3):
        writes.command(_command(seq))
    writes.held("execute", tokens_in=7)
    await writes.flush()
    await lock

    assert writes.live.fault is None
    assert [c.seq for c in store.commands("t001")] == [1, 2, 3]
    row = store.get("t001")
    assert (row.steps, row.tokens_in) == (3, 7)


async def test_an_attempt_still_waiting_when_the_lease_runs_out_ends_the_task_as_greens(
    running_task_store, impatient_db
):
    store, db = running_task_store, impatient_db
    writes = _writes(store, db, give_up_after_s=0.6)
    lock = _lock_for(store, 2.0)  # held from here
    writes.command(_command(1))
    await writes.flush()
    assert not lock.done()  # it gave up while the attempt still waited for the lock
    fault = writes.live.fault
    assert isinstance(fault, GreenFault) and fault.end_reason == "storage", fault
    assert writes.live.ended.is_set()
    await lock
