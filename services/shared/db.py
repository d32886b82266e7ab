"""One way to make a database engine from any SQLAlchemy URL (migrations: services/shared/migrate.py).

SQLite gets WAL and a busy timeout; ``postgresql://`` URLs use psycopg 3 (the ``postgres`` extra).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long a SQLite write waits for another writer's lock before it fails ("database is
locked"), unless the URL says otherwise (``sqlite:///data/green.db?timeout=5``)."""


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


def connect_engine(url: str) -> Engine:
    """The engine alone, schema untouched (tests and tools that inspect a database)."""
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
            connect_args["timeout"] = SQLITE_BUSY_TIMEOUT_S
    engine = create_engine(url, connect_args=connect_args, pool_pre_ping=not is_sqlite)
    if is_sqlite:

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # readers never block the writer
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

    return engine
