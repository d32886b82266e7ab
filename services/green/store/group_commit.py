"""Inserts that arrive while another is under way share the next transaction (a group commit).

Every ``POST /tasks`` inserts its task. Four clients posting at once made four transactions, and
SQLite writes one at a time: the fourth waited for three commits, each slow on a busy machine.
:class:`GroupCommit` sends the first caller's rows at once and gathers those that arrive
meanwhile; when the transaction under way ends, the gathered rows go in one more. No caller waits
for more than the transaction under way and its own, however many post together.

Each caller's rows land or fail together with those of the others in its transaction: all or
none, as for one caller (a failing database fails them all, each caller gets the error). But a
row can fail a transaction by itself (a task id of the client's choosing that is already taken):
a transaction of several callers that fails with such an error (``alone_on``) is sent again
caller by caller, and only the caller whose rows the database refuses gets it. A caller
that stops waiting (its client went away) does not take its rows out: once gathered, they are
sent, as a call already running in the database's threads lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class GroupCommit(Generic[T]):
    """``await group(rows)``: ``rows`` inserted by ``insert`` (one transaction per call of it),
    with the rows of the callers that arrived while the previous insert was under way."""

    def __init__(
        self,
        insert: Callable[[list[T]], Awaitable[None]],
        alone_on: tuple[type[Exception], ...] = (),
    ) -> None:
        self._insert = insert
        self._alone_on = alone_on
        """Errors a caller's own rows can cause: its transaction's callers are sent again alone."""
        self._waiting: list[tuple[Sequence[T], asyncio.Future[None]]] = []
        self._sending: asyncio.Task[None] | None = None

    async def __call__(self, rows: Sequence[T]) -> None:
        done = asyncio.get_running_loop().create_future()
        self._waiting.append((rows, done))
        if self._sending is None:
            self._sending = asyncio.create_task(self._send(), name="group-commit")
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:  # its outcome is nobody's now: read, so never logged
            done.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise

    async def _send(self) -> None:
        batch: list[tuple[Sequence[T], asyncio.Future[None]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                await self._send_batch(batch)
        finally:  # green is stopping: the callers not answered stop with it, never left hanging
            self._sending = None
            for _, done in [*batch, *self._waiting]:
                if not done.done():
                    done.cancel()
            self._waiting = []

    async def _send_batch(self, batch: list[tuple[Sequence[T], asyncio.Future[None]]]) -> None:
        """One transaction for the rows of ``batch``'s callers; each learns its outcome."""
        try:
            await self._insert([row for rows, _ in batch for row in rows])
        except Exception as exc:
            if isinstance(exc, self._alone_on) and len(batch) > 1:
                for one in batch:  # whose rows were refused? each caller in a transaction alone
                    await self._send_batch([one])
                return
            for _, done in batch:  # each caller gets it
                done.set_exception(exc)
            return
        for _, done in batch:
            done.set_result(None)
