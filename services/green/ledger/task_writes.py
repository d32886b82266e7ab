"""A running task's own records (its commands, its usage, its submissions), written behind its
requests.

Purple's ``execute`` and ``submit`` are answered from the task's state in memory; what a request
changed is written here after the answer, in order, by one asyncio task per live task while it
has writes to make. A database that is locked or away for a while delays the record, not the
agent. A write that fails because the database is away (:data:`UNREACHABLE`) is retried with
backoff until it lands, or until ``give_up_after_s`` (the lease: by then another replica may
have ended the task) has passed since it first failed; then, or at once for an error retrying
cannot mend, the task ends as green's failure (``storage``, infra; the agent is told nothing of
it). An attempt that outlived its deadline but had started is waited for, not retried: it may
still land, and a write made again beside it would land twice. A write that finds the task no
longer held (another replica ended it) stops the task without writing more. The runner waits
for the writes (:meth:`TaskWrites.flush`) before it judges the task and before it writes the
end, so an ended task's record holds every command.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from services.green.store.crud import TaskStore
from services.green.store.errors import STORAGE_ERRORS, UNREACHABLE, DatabaseUnavailable
from services.green.store.models import Command
from services.green.store.offloop import Database
from services.shared.logging import get_logger

log = get_logger("services.green.ledger.task_writes")

RETRY_FIRST_S = 0.2
RETRY_MAX_S = 2.0
"""Backoff between attempts while the database is away (doubling, capped)."""


@dataclass(frozen=True)
class _Write:
    call: Callable[[], object]
    request: str
    """The request whose record it is (``execute``, ``submit``): for the log."""
    held: bool = False
    """The call answers whether the task is still held (``update_held``)."""


class RecordedTask(Protocol):
    """What the writes know of the task they record (green's is a
    :class:`~services.green.tasks.live_task.LiveTask`): its id and log context, and how a write that
    fails ends it."""

    lost: bool
    """Set when a write finds the task no longer held (another replica ended it)."""

    @property
    def id(self) -> str: ...

    def log_context(self) -> AbstractContextManager[None]: ...

    def storage_broke(self, exc: BaseException, while_: str) -> object:
        """The database failed while writing the record of ``while_``: the task ends as infra."""


Recorded = TypeVar("Recorded", bound=RecordedTask)


class TaskWrites(Generic[Recorded]):
    """The pending writes of one live task, landed in order behind its requests."""

    def __init__(
        self,
        live: Recorded,
        db: Database,
        store: TaskStore,
        instance: str,
        *,
        give_up_after_s: float,
        on_lost: Callable[[Recorded], None],
    ) -> None:
        self.live, self.db, self.store, self.instance = live, db, store, instance
        self.give_up_after_s = give_up_after_s
        self.on_lost = on_lost
        self._pending: deque[_Write] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    def command(self, row: Command) -> None:
        """Record a command and the task's step count."""
        self._add(_Write(partial(self.store.add_command, row), "execute"))

    def held(self, request: str, **fields: Any) -> None:
        """Write ``fields`` on the task while this replica holds it."""
        call = partial(self.store.update_held, self.live.id, self.instance, **fields)
        self._add(_Write(call, request, held=True))

    def _add(self, write: _Write) -> None:
        self._pending.append(write)
        self._idle.clear()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain(), name=f"writes-{self.live.id}")

    async def flush(self) -> None:
        """Wait until every write made so far has landed, or ended the task."""
        await self._idle.wait()

    def close(self) -> None:
        """Drop what is still pending (the task is no longer this replica's)."""
        self._pending.clear()
        if self._writer is not None:
            self._writer.cancel()
        self._idle.set()

    async def _drain(self) -> None:
        try:
            while self._pending:
                if not await self._land(self._pending[0]):
                    self._pending.clear()  # the task ends: nothing after it is written
                    break
                self._pending.popleft()
        finally:
            self._idle.set()

    async def _land(self, write: _Write) -> bool:
        """Write until it lands (True); False when it ended the task."""
        live, delay, failing_since = self.live, RETRY_FIRST_S, None
        while True:
            started = time.monotonic()
            spent = 0.0 if failing_since is None else started - failing_since
            patience = self.give_up_after_s - spent
            try:
                result = await self._attempt(write, patience)
            except UNREACHABLE as exc:
                if failing_since is None:
                    failing_since = started
                    with live.log_context():
                        log.warning("task.record_delayed", request=write.request, error=str(exc))
                if time.monotonic() - failing_since < self.give_up_after_s:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                live.storage_broke(exc, write.request)
                return False
            except STORAGE_ERRORS as exc:
                live.storage_broke(exc, write.request)
                return False
            if write.held and not result:
                with live.log_context():
                    log.warning("task.lease_lost", detail="ended by another replica")
                live.lost = True
                self.on_lost(live)
                return False
            if failing_since is not None:
                with live.log_context():
                    log.info("task.record_written", request=write.request)
            return True

    async def _attempt(self, write: _Write, patience_s: float) -> object:
        """One attempt at ``write``. One that outlived its deadline but had started runs on in
        its thread and may still land: it is waited for (up to ``patience_s``), never made again
        beside it, so no record lands twice (a command's row) or after a later one (the usage)."""
        try:
            return await self.db.run_behind(write.call)
        except DatabaseUnavailable as exc:
            if exc.in_flight is None:
                raise
            try:
                async with asyncio.timeout(max(patience_s, 0.0)):
                    return await asyncio.wrap_future(exc.in_flight)
            except TimeoutError:
                raise exc from None
