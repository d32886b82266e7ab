"""No interleaving of claim, cancel, shutdown and lease loss strands a task: each is driven
deterministically with the real :class:`Orchestrator` and :class:`Replica` (real SQLite store,
real Docker provider, the fixture tasks), in the loop turn where it used to strand one.

A task cancelled before its runner's first step never ran its ``finally``: it stayed
``preparing`` with its slot held and its lease renewed, through ``shutdown()`` too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import event

from services.green.app import build_orchestrator
from services.green.config import GreenSettings
from services.green.store.db import make_engine
from services.green.store.models import TaskStatus, utcnow
from services.green.tasks.orchestrator import Orchestrator
from services.green.tasks.replicas import Replica
from services.shared.task_ref import TaskRef

pytestmark = pytest.mark.docker

REF = TaskRef("arvo", "900001")


@pytest.fixture
async def green(green_settings: GreenSettings) -> AsyncIterator[tuple[Orchestrator, Replica]]:
    """A green's orchestrator and replica, registered and started as the app's lifespan does."""
    orch = build_orchestrator(green_settings, make_engine(green_settings.database_url))
    replica = Replica(orch)
    await replica.register()
    await orch.start()
    yield orch, replica
    await replica.stop()
    await orch.shutdown()
    await orch.sandboxes.aclose()


async def _claimed(orch: Orchestrator, replica: Replica) -> str:
    """Queue one task and claim it: the dispatcher's round, ending with the task adopted and its
    runner created but not yet started (nothing has yielded to the loop since)."""
    task = await orch.create_task(REF)
    assert await replica.claim() == [task.id]
    live = orch.live.get(task.id)
    assert live is not None and live.runner is not None and not live.runner.done()
    return task.id


async def _row(orch: Orchestrator, task_id: str):
    return await asyncio.to_thread(orch.store.get, task_id)


async def test_a_cancel_that_lands_as_the_task_is_claimed_ends_it_cancelled(green) -> None:
    """The claim's adoption and a cancel in the same loop turn (every canceller comes through
    ``Orchestrator.cancel``: REST, A2A, and the watcher reading another replica's request): the
    task ends ``cancelled``, its slot free, its lease no longer held."""
    orch, replica = green
    task_id = await _claimed(orch, replica)

    ended = await orch.cancel(task_id)

    assert ended.status is TaskStatus.cancelled, ended
    assert task_id not in orch.live  # the slot is free
    row = await _row(orch, task_id)
    assert row.status is TaskStatus.cancelled and row.end_reason == "cancelled"
    assert (
        await asyncio.to_thread(orch.queue.renew, orch.settings.instance_name, [task_id], utcnow())
        == set()
    )


async def test_a_shutdown_right_after_the_last_claim_ends_the_claimed_task(green) -> None:
    """The dispatcher's last round adopts a task, then the process stops: the task ends (as
    green's failure, not the agent's) instead of staying ``preparing`` for good."""
    orch, replica = green
    task_id = await _claimed(orch, replica)

    await replica.stop()
    await orch.shutdown()

    row = await _row(orch, task_id)
    assert row.status.terminal, row
    assert row.failure_kind != "agent", row
    assert not list(orch.live)


async def test_a_claim_that_returns_after_the_shutdown_began_gives_its_tasks_back(
    green, green_settings: GreenSettings
) -> None:
    """The shutdown begins while the claim's statement runs: the tasks it took go back to the
    queue for another replica (or the next start), none is charged to anyone."""
    orch, replica = green
    task = await orch.create_task(REF)

    def stop_during_claim(conn, cursor, statement, *args) -> None:
        if "picked" in statement:  # the claim's UPDATE ... RETURNING has run
            orch.begin_shutdown()

    event.listen(orch.store.engine, "after_cursor_execute", stop_during_claim)
    try:
        assert await replica.claim() == []
    finally:
        event.remove(orch.store.engine, "after_cursor_execute", stop_during_claim)

    row = await _row(orch, task.id)
    assert row.status is TaskStatus.queued and row.lease_until is None, row
    assert not list(orch.live)


async def test_a_lease_lost_as_the_task_is_claimed_stops_its_runner_without_writing(green) -> None:
    """Another replica took the task over (its lease ran out) just as this one adopted it: the
    runner stops, writes nothing over the other replica's end, and frees its slot."""
    orch, replica = green
    task_id = await _claimed(orch, replica)
    now = utcnow() + timedelta(hours=1)  # as if the lease had run out
    assert await asyncio.to_thread(
        lambda: orch.queue.take_over(
            "other-replica",
            task_id,
            replica.name,
            now=now,
            until=now,
            status=TaskStatus.failed,
            end_reason="replica_lost",
        )
    )

    await replica.keep_leases()
    live = orch.live.get(task_id)
    if live is not None:
        await orch.wait(task_id)

    row = await _row(orch, task_id)
    assert row.status is TaskStatus.failed and row.end_reason == "replica_lost", row
    assert task_id not in orch.live
