"""services/shared/db.py: SQLite's busy timeout, 30 s unless the URL names its own."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from services.shared.db import SQLITE_BUSY_TIMEOUT_S, connect_engine


def busy_timeout_ms(url: str) -> int:
    engine = connect_engine(url)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one()
    finally:
        engine.dispose()


def test_a_sqlite_url_without_a_timeout_waits_30_s_for_a_lock(tmp_path: Path) -> None:
    assert SQLITE_BUSY_TIMEOUT_S == 30
    assert busy_timeout_ms(f"sqlite:///{tmp_path}/a.db") == 30_000


def test_the_urls_timeout_is_how_long_a_write_waits_for_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    assert busy_timeout_ms(f"sqlite:///{path}?timeout=0.3") == 300
    engine = connect_engine(f"sqlite:///{path}?timeout=0.3")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        t0 = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"), engine.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
        waited = time.monotonic() - t0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        engine.dispose()
    assert 0.25 <= waited < SQLITE_BUSY_TIMEOUT_S  # its own 0.3 s, not the default
