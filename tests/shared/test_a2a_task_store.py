"""The A2A task store both services mount: a service that runs for days does not hold every A2A
task it has served."""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskState, TaskStatus

from services.shared.a2a import RecentTaskStore


def _task(i: int, state: TaskState) -> Task:
    return Task(id=f"t{i}", context_id=f"c{i}", status=TaskStatus(state=state))


async def test_it_keeps_every_task_under_way_and_only_the_newest_ended_ones() -> None:
    store, ctx = RecentTaskStore(keep=3), ServerCallContext()
    await store.save(_task(0, TaskState.TASK_STATE_WORKING), ctx)  # under way for good
    for i in range(1, 8):
        await store.save(_task(i, TaskState.TASK_STATE_WORKING), ctx)
        await store.save(_task(i, TaskState.TASK_STATE_COMPLETED), ctx)
    kept = [i for i in range(8) if await store.get(f"t{i}", ctx) is not None]
    assert kept == [0, 5, 6, 7]
