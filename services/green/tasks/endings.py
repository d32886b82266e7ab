"""Writing a task's end so that it lands even when the database is away.

A task's runner ends by writing its terminal row (status, end reason, scores). The first attempt
is made at once; when the database fails it, the end is kept here and retried with backoff (up to
every :data:`RETRY_MAX_S`) until it lands, or until the row shows the task is no longer this
replica's (another replica's takeover ended it). Meanwhile the runner is forgotten: its slot is
free, and its lease is no longer renewed (only live tasks are), so with several replicas one of
the others ends the task when its lease runs out; alone, this replica ends it when the database
answers again. A cancel of such a task retries at once; a shutdown waits a bounded time for the
writes (:meth:`Endings.close`), and a task whose end is still unwritten then is ended by another
replica's takeover or by this name's next start (which fails its unfinished tasks).
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from services.green.store.crud import TaskStore
from services.green.store.errors import STORAGE_ERRORS, DatabaseUnavailable
from services.green.store.models import TaskStatus, utcnow
from services.green.store.offloop import Database
from services.green.tasks.live_task import LiveTask, TaskEvent
from services.shared.logging import get_logger
from services.shared.outcome import TaskOutcome

log = get_logger("services.green.tasks.endings")

RETRY_FIRST_S = 0.2
RETRY_MAX_S = 2.0
"""Backoff between attempts to write an end while the database is away (doubling, capped)."""


@dataclass
class _Pending:
    live: LiveTask
    outcome: TaskOutcome
    fields: dict[str, Any]
    now: asyncio.Event = field(default_factory=asyncio.Event)
    """Set to retry at once (a cancel asked for the task)."""
    runner: asyncio.Task[None] | None = None
    in_flight: Future[bool] | None = None
    """The last attempt, when it outlived its deadline but had started: it may still land, so
    the next attempt waits for its answer instead of writing again (an end written twice would
    find the task no longer held by its second write, and take this replica's own end for
    another replica's)."""


class Endings:
    """The ends of this replica's tasks, written at once or retried until they land."""

    def __init__(self, store: TaskStore, db: Database, instance: str) -> None:
        self.store = store
        self.db = db
        self.instance = instance
        self._pending: dict[str, _Pending] = {}

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._pending

    def __len__(self) -> int:
        return len(self._pending)

    def ids(self) -> set[str]:
        return set(self._pending)

    async def end(self, live: LiveTask, outcome: TaskOutcome, fields: dict[str, Any]) -> bool:
        """Write the end once; when the database fails, keep retrying it in the background.
        True when it is written (or another replica ended the task)."""
        pending = _Pending(live, outcome, fields)
        if await self._attempt(pending, first=True):
            return True
        pending.runner = asyncio.create_task(self._retry(pending), name=f"end-{live.id}")
        self._pending[live.id] = pending
        return False

    async def end_orphan(self, task_id: str, reason: str) -> bool:
        """Cancel a task this replica holds in the store but does not run (its claim was made,
        then the database failed before it was adopted). True when it was."""
        done = await self.db.run_behind(
            self.store.update_held,
            task_id,
            self.instance,
            status=TaskStatus.cancelled,
            end_reason="cancelled",
            error=reason,
            finished_at=utcnow(),
        )
        if done:
            log.warning("task.orphan_cancelled", task_id=task_id)
        return done

    def nudge(self, task_id: str) -> None:
        """Retry the end of this task now (a cancel reached it)."""
        if (p := self._pending.get(task_id)) is not None:
            p.now.set()

    async def _retry(self, p: _Pending) -> None:
        delay = RETRY_FIRST_S
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await p.now.wait()
                p.now.clear()
                if await self._attempt(p):
                    return
                delay = min(delay * 2, RETRY_MAX_S)
        finally:
            self._pending.pop(p.live.id, None)

    async def _attempt(self, p: _Pending, first: bool = False) -> bool:
        live, outcome = p.live, p.outcome
        in_flight, p.in_flight = p.in_flight, None
        try:
            if in_flight is not None:
                held = await asyncio.wrap_future(in_flight)
            else:
                held = await self.db.run_behind(
                    self.store.update_held,
                    live.id,
                    self.instance,
                    status=outcome.status,
                    end_reason=outcome.end_reason,
                    error=outcome.error,
                    failure_kind=outcome.failure_kind,
                    **p.fields,
                )
        except STORAGE_ERRORS as exc:
            if isinstance(exc, DatabaseUnavailable):
                p.in_flight = exc.in_flight
            if first:
                with live.log_context():
                    log.error(
                        "task.end_unwritten",
                        status=outcome.status.value,
                        error=str(exc),
                        detail="the database failed; retried until it lands (slot freed, "
                        "lease no longer renewed)",
                    )
            return False
        with live.log_context():
            if not held:  # another replica ended it (its lease had run out)
                live.lost = True
                log.warning(
                    "task.lease_lost",
                    detail=f"not {outcome.status.value}: another replica ended it",
                )
                return True
            if not first:
                log.info("task.end_written", detail="the database answered again")
            live.status = outcome.status
            message = outcome.error or outcome.end_reason
            log.info(f"task.{outcome.status.value}", detail=message)
        live.publish(TaskEvent(live.id, outcome.status, message))
        return True

    async def close(self, wait_s: float) -> list[str]:
        """At shutdown: wait up to ``wait_s`` for the ends still pending, then stop retrying.
        Returns the ids whose end was not written (their leases run out)."""
        runners = [p.runner for p in self._pending.values() if p.runner is not None]
        for p in self._pending.values():
            p.now.set()
        if runners:
            await asyncio.wait(runners, timeout=wait_s)
        left = sorted(self._pending)
        for p in list(self._pending.values()):
            if p.runner is not None:
                p.runner.cancel()
        if left:
            log.error(
                "task.ends_unwritten_at_shutdown",
                tasks=left,
                detail="the database did not answer; another replica's takeover or this "
                "name's next start ends them",
            )
        return left
