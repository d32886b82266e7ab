"""services/shared/sqlite_writer.py: the writers of one process to one SQLite file take turns on a
lock of their own (a writer waits there, not in SQLite's busy handler); the turn is given back
however the transaction ends; writers of other processes are still settled by SQLite's lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from services.shared.db import connect_engine


def _table(path: Path, **kwargs) -> Engine:
    engine = connect_engine(f"sqlite:///{path}", **kwargs)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
    return engine


def _sent(engine: Engine, log: list[str], name: str) -> None:
    """Record in ``log`` each INSERT ``engine`` sends to SQLite (after the turn was taken)."""

    @event.listens_for(engine, "before_cursor_execute")
    def _record(_conn, _cursor, statement, *_rest) -> None:
        if statement.startswith("INSERT"):
            log.append(f"{name} sent")


def test_a_second_writer_waits_for_the_first_to_commit_before_it_reaches_sqlite(tmp_path):
    """Without the turns, B's INSERT reaches SQLite while A's transaction is open, and B sleeps
    in SQLite's busy handler (1, 2, 5, 10 ms ...) until A commits; with them it is sent after."""
    path = tmp_path / "a.db"
    a, b = _table(path), connect_engine(f"sqlite:///{path}")
    log: list[str] = []
    _sent(a, log, "A")
    _sent(b, log, "B")
    holding = threading.Event()

    def first() -> None:
        with a.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
            holding.set()
            time.sleep(0.5)  # B tries meanwhile
            log.append("A commits")

    def second() -> None:
        holding.wait(10)
        with b.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (2)"))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert log == ["A sent", "A commits", "B sent"]
    with a.connect() as conn:
        assert sorted(conn.execute(text("SELECT x FROM t")).scalars()) == [1, 2]
    a.dispose()
    b.dispose()


@pytest.mark.parametrize("ending", ["rollback", "error", "invalidate"])
def test_the_turn_is_given_back_however_the_transaction_ends(tmp_path, ending):
    """A transaction rolled back, one that raised, and a connection thrown away all give the
    turn back: the next writer (a short timeout, so a turn kept would fail it) writes."""
    engine = _table(tmp_path / "b.db", deadline_s=0.5)
    conn = engine.connect()
    conn.execute(text("INSERT INTO t VALUES (1)"))
    if ending == "rollback":
        conn.rollback()
        conn.close()
    elif ending == "error":
        with pytest.raises(OperationalError):
            conn.execute(text("INSERT INTO missing VALUES (1)"))
        conn.close()
    else:
        conn.invalidate()
        conn.close()
    with engine.begin() as other:
        other.execute(text("INSERT INTO t VALUES (2)"))
    with engine.connect() as c:
        assert list(c.execute(text("SELECT x FROM t")).scalars()) == [2]
    engine.dispose()


def test_a_writer_that_gets_no_turn_fails_as_a_locked_database_after_the_timeout(tmp_path):
    engine = _table(tmp_path / "c.db", deadline_s=0.3)
    holder = engine.connect()
    holder.execute(text("INSERT INTO t VALUES (1)"))  # holds the turn
    failed: list[BaseException] = []

    def writer() -> None:
        try:
            with engine.begin() as conn:
                conn.execute(text("INSERT INTO t VALUES (2)"))
        except OperationalError as exc:
            failed.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    t.join(10)
    holder.rollback()
    holder.close()
    assert len(failed) == 1 and "database is locked" in str(failed[0])
    engine.dispose()


def test_readers_take_no_turn(tmp_path):
    engine = _table(tmp_path / "d.db", deadline_s=0.3)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
    holder = engine.connect()
    holder.execute(text("INSERT INTO t VALUES (2)"))  # a writer under way
    try:
        with engine.connect() as reader:  # WAL: reads the committed row, waits for nothing
            assert list(reader.execute(text("SELECT x FROM t")).scalars()) == [1]
    finally:
        holder.rollback()
        holder.close()
        engine.dispose()


def test_another_processs_writer_is_still_waited_for_by_sqlites_lock(tmp_path):
    """A writer outside this process (here a connection the turns do not know) holds SQLite's
    lock: ours waits for it by the busy timeout, as before, and writes once it is gone."""
    path = tmp_path / "e.db"
    engine = _table(path, deadline_s=5)
    outsider = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    outsider.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, lambda: outsider.execute("COMMIT")).start()
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
    outsider.close()
    with engine.connect() as c:
        assert list(c.execute(text("SELECT x FROM t")).scalars()) == [1]
    engine.dispose()
