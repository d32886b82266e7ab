"""One way to make a database engine from any SQLAlchemy URL (migrations: services/shared/migrate.py).

SQLite gets WAL; ``postgresql://`` URLs use psycopg 3 (the ``postgres`` extra). Every statement
is bounded by the engine's deadline, on both: nothing waits for a lock, a connection or the
server longer than that (SQLite's busy timeout; PostgreSQL's ``lock_timeout``,
``statement_timeout``, ``connect_timeout`` and TCP keepalives; the pool's checkout timeout), and
a session of ours left idle in a transaction is ended by the server
(``idle_in_transaction_session_timeout``), so it cannot hold locks every replica waits for. The
writers of one process to one SQLite file take turns on a lock of their own, handed over at once
(``services/shared/sqlite_writer.py``), instead of sleeping in SQLite's busy handler.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

from services.shared.sqlite_writer import take_turns

DEADLINE_S = 5.0
"""How long one statement may wait, by default, for a lock, a connection or the server before it
fails (a SQLite URL's own ``?timeout=`` wins for its busy timeout, a PostgreSQL URL's own
``options`` for the server settings)."""
IDLE_IN_TRANSACTION_S = 60.0
"""After this long idle inside a transaction, PostgreSQL ends one of our sessions."""


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and for ``:memory:``)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def normalized_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg 3, the driver the extra installs
    (SQLAlchemy's default would be psycopg2, which the project does not ship)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def connect_engine(url: str, deadline_s: float = DEADLINE_S) -> Engine:
    """The engine alone, schema untouched (tests and tools that inspect a database); each
    statement bounded by ``deadline_s`` (see the module's doc)."""
    url = normalized_url(url)
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    parsed = make_url(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    connect_args: dict[str, object] = {}
    if is_sqlite:
        connect_args["check_same_thread"] = False
        if "timeout" not in parsed.query:  # the URL's own wins (the dialect reads it)
            connect_args["timeout"] = deadline_s
    elif parsed.get_backend_name() == "postgresql":
        connect_args.update(_postgres_deadlines(parsed.query, deadline_s))
    engine = create_engine(
        url, connect_args=connect_args, pool_pre_ping=not is_sqlite, pool_timeout=deadline_s
    )
    if is_sqlite:

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # readers never block the writer
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        if path is not None:
            take_turns(engine, path, float(str(parsed.query.get("timeout", deadline_s))))
    return engine


def _postgres_deadlines(query: Mapping[str, object], deadline_s: float) -> dict[str, object]:
    """libpq parameters that bound a session's waits (those the URL sets are left to it)."""
    ms = int(deadline_s * 1000)
    params: dict[str, object] = {
        "connect_timeout": max(1, math.ceil(deadline_s)),
        "keepalives": 1,  # a server that vanished is noticed, not waited for
        "keepalives_idle": max(1, math.ceil(deadline_s)),
        "keepalives_interval": 1,
        "keepalives_count": 3,
        "options": f"-c lock_timeout={ms} -c statement_timeout={ms} "
        f"-c idle_in_transaction_session_timeout={int(IDLE_IN_TRANSACTION_S * 1000)}",
    }
    return {k: v for k, v in params.items() if k not in query}
