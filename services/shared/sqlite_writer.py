"""One writer at a time per SQLite file in this process, handed over at once.

SQLite lets one transaction write at a time. A writer that finds the file's lock taken does not
queue: its busy handler sleeps (1, 2, 5, 10, 15, 20, 25 ms, …) and tries again, until its busy
timeout. With a dozen threads writing (a burst of tasks starting), a writer that misses the lock
by a moment sleeps 1 ms, then 2, then 5 more, for a lock each writer holds for a millisecond or
two on an idle machine.

The threads of one process therefore take turns on a :class:`threading.Lock` of their own, per
database file: a transaction takes it at its first write statement (as SQLite takes its own lock)
and gives it back when its connection returns to the pool, its transaction over; the next writer
wakes as soon as it is free. SQLite's own lock and busy handler still settle writers of other
processes (another replica, a migration, an operator's ``sqlite3`` shell). A writer waits
for this process's lock at most the busy timeout, then fails as a locked database does (an
``OperationalError``, "database is locked"), so it may wait up to twice the busy timeout in all:
once for a writer here, once for one elsewhere (the caller's own wait is bounded by
``services/green/store/offloop.py``).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")
"""The statements that take SQLite's write lock (the first word, upper case)."""
_HELD = "sqlite_writer_held"
"""Key of a pooled connection's ``info``: this connection holds its file's writer lock."""

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path.resolve(), threading.Lock())


def _writes(statement: str) -> bool:
    words = statement.split(None, 1)
    return bool(words) and words[0].upper() in _WRITES


def take_turns(engine: Engine, path: Path, timeout_s: float) -> None:
    """Make ``engine``'s writers to ``path`` take turns with this process's other writers to the
    same file (see the module's doc); one waits at most ``timeout_s`` for its turn."""
    lock = _lock_for(path)

    def release(info: dict[str, Any]) -> None:
        if info.pop(_HELD, False):
            lock.release()

    @event.listens_for(engine, "before_cursor_execute")
    def _take(conn, _cursor, statement, params, _context, _many) -> None:
        if conn.info.get(_HELD) or not _writes(statement):
            return
        if not lock.acquire(timeout=timeout_s):
            raise OperationalError(
                statement, params, sqlite3.OperationalError("database is locked")
            )
        conn.info[_HELD] = True

    @event.listens_for(engine, "checkin")
    @event.listens_for(engine, "invalidate")
    def _give_back(_dbapi_conn, record, *_rest) -> None:
        # a connection returns to the pool once its transaction has committed or rolled
        # back (a session's commit returns it): given back after SQLite's own lock, never
        # before (the next writer would find that lock still taken and sleep)
        if record is not None:
            release(record.info)
