"""services/shared/db.py: every statement bounded by the engine's deadline (SQLite's busy timeout
unless the URL names its own; PostgreSQL's lock, statement and idle-in-transaction timeouts)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from services.shared.db import DEADLINE_S, connect_engine


def busy_timeout_ms(url: str, **kwargs) -> int:
    engine = connect_engine(url, **kwargs)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one()
    finally:
        engine.dispose()


def test_a_sqlite_url_without_a_timeout_waits_the_deadline_for_a_lock(tmp_path: Path) -> None:
    assert busy_timeout_ms(f"sqlite:///{tmp_path}/a.db") == DEADLINE_S * 1000 == 5_000
    assert busy_timeout_ms(f"sqlite:///{tmp_path}/a.db", deadline_s=2) == 2_000


def test_the_urls_timeout_is_how_long_a_write_waits_for_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    assert busy_timeout_ms(f"sqlite:///{path}?timeout=0.3", deadline_s=9) == 300
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
    assert 0.25 <= waited < DEADLINE_S  # its own 0.3 s, not the default


def test_a_postgres_session_waits_no_longer_than_the_deadline(postgres) -> None:
    """A lock another session holds (a DDL, an idle transaction) fails our statement after the
    deadline instead of freezing it; our own sessions idle in a transaction are ended."""
    url = postgres.new_database("deadline")
    engine = connect_engine(url, deadline_s=0.5)
    holder = connect_engine(url)
    try:
        with engine.connect() as conn:
            settings = {
                name: conn.exec_driver_sql(f"SHOW {name}").scalar_one()
                for name in (
                    "lock_timeout",
                    "statement_timeout",
                    "idle_in_transaction_session_timeout",
                )
            }
        assert settings == {
            "lock_timeout": "500ms",
            "statement_timeout": "500ms",
            "idle_in_transaction_session_timeout": "1min",
        }
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        with holder.connect() as locker:
            locker.execute(text("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"))
            t0 = time.monotonic()
            with (
                pytest.raises(OperationalError, match=r"(lock|statement) timeout"),
                engine.begin() as conn,
            ):
                conn.execute(text("SELECT * FROM t"))
            waited = time.monotonic() - t0
            locker.rollback()
        assert 0.4 <= waited < 5
    finally:
        engine.dispose()
        holder.dispose()


def test_a_postgres_urls_own_options_win(postgres) -> None:
    url = postgres.new_database("options") + "?options=-c%20lock_timeout%3D7s"
    engine = connect_engine(url, deadline_s=0.5)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar_one() == "7s"
            assert conn.exec_driver_sql("SHOW statement_timeout").scalar_one() == "0"
    finally:
        engine.dispose()
