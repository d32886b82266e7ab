"""One way to make a database engine: any SQLAlchemy URL; SQLite gets WAL and a busy timeout."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import MetaData, event
from sqlalchemy.engine import Engine
from sqlmodel import create_engine


def make_engine(url: str, metadata: MetaData) -> Engine:
    """Create the engine and the tables of ``metadata`` (each service has its own metadata)."""
    is_sqlite = url.startswith("sqlite")
    if url.startswith("sqlite:///") and ":memory:" not in url:
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": 30} if is_sqlite else {}
    )
    if is_sqlite:

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # readers never block the writer
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

    metadata.create_all(engine)
    return engine
