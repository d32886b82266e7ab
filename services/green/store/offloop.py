"""Green's database from the event loop: every call in a bounded pool of threads, under a
deadline, and the database's health as a probe sees it.

The store's classes (:mod:`.crud`; the ledger's :mod:`~services.green.ledger.queue` and
:mod:`~services.green.ledger.instances`) are synchronous SQLAlchemy.
The event loop never calls them itself: ``await db.run(store.get, task_id)`` runs the call in one
of :data:`THREADS` threads, so a database that is slow or locked holds up the callers that need
it, never the card, ``/healthz``, or a running task's commands. The database bounds each
statement itself (``services/shared/db.py``: every wait for a lock, a connection or the server
lasts at most ``GREEN_DATABASE_DEADLINE_S``); the caller's wait is bounded too, by that deadline
and :data:`MARGIN_S`, so a connection that hangs beyond them (a frozen server) costs a caller no
more than that: it gets :class:`DatabaseUnavailable` (the API's 503). A call still queued then
never runs; one under way cannot be stopped and may still land (the error carries it, as
``in_flight``, for a writer that would otherwise make the same write twice; a caller that must
know the outcome waits for its end: :meth:`Database.run_to_end`).

A probe (a write that changes nothing: it waits for any writer's lock, on SQLite and PostgreSQL
alike) runs every :data:`PROBE_EVERY_S`; :attr:`Database.answers` is False from the first call
that finds the database away (or locked past its deadline), or a probe that has waited longer
than :data:`PROBE_WITHIN_S`, until a probe answers again: ``/healthz`` reads it without touching
the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from services.green.store.errors import STORAGE_ERRORS, UNREACHABLE, DatabaseUnavailable
from services.shared.logging import get_logger
from services.shared.threads import started_pool

log = get_logger("services.green.store")

P = ParamSpec("P")
T = TypeVar("T")

THREADS = 8
"""Database calls under way at once (more wait for a thread; SQLite has one writer anyway)."""
BEHIND_THREADS = 4
"""The same for the calls no request waits on (:meth:`Database.run_behind`)."""
MARGIN_S = 1.0
"""How much longer than the database's own deadline a caller waits for a call's answer."""
SETTLE_DEADLINES = 4
"""How many more deadlines :meth:`Database.run_to_end` waits for a call under way to end: its
connection, then the statements of one store call (a write, a read back, the commit) are each
bounded by the deadline (on SQLite, a writer waits for this process's turn and then for SQLite's
lock: two)."""
PROBE_EVERY_S = 1.0
PROBE_WITHIN_S = 1.0
"""A probe unanswered this long says the database is degraded."""


class Database:
    """Runs the store's calls off the event loop (:meth:`run`) and watches the database's health
    (:meth:`watch`, :attr:`answers`)."""

    def __init__(self, deadline_s: float, threads: int = THREADS) -> None:
        self.deadline_s = deadline_s
        self._pool = started_pool(threads, "green-db")
        self._behind = started_pool(BEHIND_THREADS, "green-db-behind")
        """The runners' and the replica's own work (:meth:`run_behind`): a request never
        queues behind it."""
        self._ok = True
        self._probe_since: float | None = None
        """When the probe under way started (None: none is)."""

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in the database's threads. Raises what it raises, or
        :class:`DatabaseUnavailable` when no answer came within the deadline and its margin."""
        return await self._run(self._pool, functools.partial(fn, *args, **kwargs))

    async def run_to_end(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`run` for a write whose caller must learn whether it landed (``POST /tasks``'s
        insert: a 503 says "try again", and a client that does so after a write that landed
        later made its tasks twice). A call under way when the caller's deadline passes is
        waited for to its end, which the database's own deadlines bound (a connection, then
        each statement: :data:`SETTLE_DEADLINES`); only past that is the outcome unknown, and
        :class:`DatabaseUnavailable` raised."""
        try:
            return await self.run(fn, *args, **kwargs)
        except DatabaseUnavailable as exc:
            if exc.in_flight is None:
                raise  # still queued: cancelled, it never runs
            running = exc.in_flight
        try:
            async with asyncio.timeout(SETTLE_DEADLINES * self.deadline_s):
                return await asyncio.shield(asyncio.wrap_future(running))
        except TimeoutError:
            raise DatabaseUnavailable(
                f"{getattr(fn, '__name__', 'a call')} under way for "
                f"{(SETTLE_DEADLINES + 1) * self.deadline_s + MARGIN_S:g} s"
            ) from None

    async def run_behind(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`run` in threads of their own, for what no request waits on (a running task's
        records, its end, the replica's claims and leases): 64 tasks starting write a lot, and
        a ``POST /tasks`` queued behind their writes waited for them."""
        return await self._run(self._behind, functools.partial(fn, *args, **kwargs))

    async def _run(self, pool: ThreadPoolExecutor, call_: Callable[[], T]) -> T:
        fn = getattr(call_, "func", call_)
        future = pool.submit(call_)
        limit = asyncio.timeout(self.deadline_s + MARGIN_S)
        try:
            async with limit:
                return await asyncio.wrap_future(future)
        except TimeoutError:
            if not limit.expired():
                raise
            exc = DatabaseUnavailable(
                f"the database did not answer {getattr(fn, '__name__', 'a call')} within "
                f"{self.deadline_s + MARGIN_S:g} s"
            )
            if not future.cancel():  # a call still queued never runs; one under way runs on
                exc.in_flight = future
            self._away(exc)
            raise exc from None
        except UNREACHABLE as exc:
            self._away(exc)
            raise

    def _away(self, exc: BaseException) -> None:
        self._mark(False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")

    @property
    def away(self) -> bool:
        """A call (or the probe) found the database away, and no probe has answered since."""
        return not self._ok

    @property
    def answers(self) -> bool:
        """Whether the database answers: it is not :attr:`away`, and no probe has waited too
        long (a slow database is degraded too)."""
        pending = self._probe_since
        return self._ok and (pending is None or time.monotonic() - pending < PROBE_WITHIN_S)

    async def watch(self, probe: Callable[[], object]) -> None:
        """Probe the database every :data:`PROBE_EVERY_S` until cancelled."""
        while True:
            self._probe_since = time.monotonic()
            try:
                await self.run(probe)
            except UNREACHABLE:
                pass  # marked by run
            except STORAGE_ERRORS as exc:
                self._away(exc)
            else:
                self._mark(True, None)
            finally:
                self._probe_since = None
            await asyncio.sleep(PROBE_EVERY_S)

    def _mark(self, ok: bool, why: str | None) -> None:
        if ok != self._ok:
            (log.info if ok else log.warning)("database.up" if ok else "database.degraded", why=why)
        self._ok = ok

    def close(self) -> None:
        """Stop the threads (calls still queued never run)."""
        for pool in (self._pool, self._behind):
            with contextlib.suppress(RuntimeError):
                pool.shutdown(wait=False, cancel_futures=True)
