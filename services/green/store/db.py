"""Green's engine: its schema is brought to head by the migrations shipped beside this module."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine

from services.green.store import models  # noqa: F401  (registers the tables)
from services.shared.db import DEADLINE_S
from services.shared.migrate import make_engine as _make_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def make_engine(url: str, deadline_s: float = DEADLINE_S) -> Engine:
    return _make_engine(url, MIGRATIONS, deadline_s)


class StatementOnEventLoop(RuntimeError):
    """A database statement ran on the event loop's thread (:func:`forbid_on_event_loop`)."""


def forbid_on_event_loop(engine: Engine) -> None:
    """Make a statement that ``engine`` runs on a thread with a running event loop raise
    :class:`StatementOnEventLoop` before it is sent. Green's loop reaches the database only
    through :class:`~services.green.store.offloop.Database` (its own threads): a statement on
    the loop would freeze every request while the database is locked or away."""

    @event.listens_for(engine, "before_cursor_execute")
    def _off_loop(conn, cursor, statement, parameters, context, executemany) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop runs on this thread: a worker of the pool
        raise StatementOnEventLoop(f"a database statement on the event loop: {statement[:80]!r}")
