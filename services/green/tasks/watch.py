"""Listeners of a task's events, and those of tasks this replica does not run (queued, or run by
another replica).

The store is the only thing replicas share, so such a listener hears the task's status
changes as the store shows them (polled by :mod:`services.green.tasks.replicas`); when this replica
claims the task, its listeners move to the live task and hear everything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from services.green.store.crud import TaskStore
from services.green.store.models import Task, TaskStatus
from services.green.store.offloop import Database
from services.green.tasks.live_task import LiveTasks, TaskEvent


class RemoteWatch:
    """Task id -> (the status last told, the listeners' queues)."""

    def __init__(self, store: TaskStore, db: Database) -> None:
        self.store = store
        self.db = db
        self._watched: dict[str, tuple[TaskStatus, list[asyncio.Queue[TaskEvent]]]] = {}

    def add(self, task: Task, q: asyncio.Queue[TaskEvent]) -> None:
        _, queues = self._watched.setdefault(task.id, (task.status, []))
        queues.append(q)

    def discard(self, task_id: str, q: asyncio.Queue[TaskEvent]) -> None:
        entry = self._watched.get(task_id)
        if entry is not None and q in entry[1]:
            entry[1].remove(q)
            if not entry[1]:
                del self._watched[task_id]

    def hand_over(self, task_id: str) -> list[asyncio.Queue[TaskEvent]]:
        """The listeners of a task this replica now runs (they leave this watch)."""
        entry = self._watched.pop(task_id, None)
        return entry[1] if entry else []

    async def poll(self) -> None:
        """Tell each listener the status its task has reached since the last poll."""
        if not self._watched:
            return
        tasks = await self.db.run_behind(self.store.get_many, list(self._watched))
        for task in tasks:
            entry = self._watched.get(task.id)
            if entry is None or entry[0] is task.status:
                continue
            message = task.end_reason or task.status.value
            if task.status.terminal and task.error:
                message = task.error
            for q in entry[1]:
                q.put_nowait(TaskEvent(task.id, task.status, message))
            if task.status.terminal:
                del self._watched[task.id]
            else:
                self._watched[task.id] = (task.status, entry[1])


async def subscribe(
    live: LiveTasks, remote: RemoteWatch, get: Callable[[str], Awaitable[Task]], task_id: str
) -> asyncio.Queue[TaskEvent]:
    """Events of a task: a live one's as they happen, a queued one's or another replica's as the
    store shows them; a finished task yields one final event at once."""
    q: asyncio.Queue[TaskEvent] = asyncio.Queue()
    task = None if task_id in live else await get(task_id)
    running = live.get(task_id)  # looked up after the read: it may have been claimed meanwhile
    if running is not None:
        running.subscribers.append(q)
        return q
    if task is None:  # it was ours and has just ended
        task = await get(task_id)
    if task.status.terminal:
        q.put_nowait(TaskEvent(task.id, task.status, task.end_reason or task.status.value))
    else:
        remote.add(task, q)
    return q


def unsubscribe(
    live: LiveTasks, remote: RemoteWatch, task_id: str, q: asyncio.Queue[TaskEvent]
) -> None:
    """Stop delivering a task's events to ``q`` (its listener went away)."""
    running = live.get(task_id)
    if running is not None and q in running.subscribers:
        running.subscribers.remove(q)
    remote.discard(task_id, q)
