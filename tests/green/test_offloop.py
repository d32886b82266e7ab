"""services/green/store/offloop.py: the event loop's way to the database, on a real SQLite file
another connection locks."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from services.green.store import offloop
from services.green.store.crud import TaskStore
from services.green.store.db import StatementOnEventLoop, forbid_on_event_loop, make_engine
from services.green.store.errors import UNREACHABLE, DatabaseUnavailable
from services.green.store.offloop import Database
from tests.store.test_queue import task


@pytest.fixture
def store(tmp_path: Path) -> TaskStore:
    return TaskStore(make_engine(f"sqlite:///{tmp_path}/g.db", deadline_s=0.2))


def _locked(store: TaskStore) -> sqlite3.Connection:
    holder = sqlite3.connect(store.engine.url.database, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


async def test_a_write_under_anothers_lock_fails_after_the_deadline_and_marks_it_away(store):
    db = Database(deadline_s=0.2)
    assert db.answers
    holder = _locked(store)
    try:
        with pytest.raises(OperationalError, match="locked"):
            await db.run(store.probe)
    finally:
        holder.execute("ROLLBACK")
    assert not db.answers and db.away
    await db.run(store.probe)  # a call that works does not say it is back: a probe does
    assert not db.answers and db.away
    db.close()


async def test_a_call_that_hangs_past_the_deadline_gives_up_and_one_still_queued_never_runs(
    monkeypatch,
):
    monkeypatch.setattr(offloop, "MARGIN_S", 0.0)
    db = Database(deadline_s=0.2, threads=1)
    started, release, ran = threading.Event(), threading.Event(), []

    def hang() -> None:  # a connection to a frozen server, say
        started.set()
        release.wait(30)

    hung = asyncio.ensure_future(db.run(hang))
    while not started.is_set():
        await asyncio.sleep(0.01)
    with pytest.raises(DatabaseUnavailable):
        await db.run(ran.append, "queued behind the hung call")
    with pytest.raises(DatabaseUnavailable):
        await hung
    assert isinstance(DatabaseUnavailable("x"), UNREACHABLE)  # the API's 503
    assert not db.answers
    release.set()
    await db.run(ran.append, "after")
    assert ran == ["after"]
    db.close()


async def test_health_follows_the_probe_through_a_lock(store, monkeypatch):
    monkeypatch.setattr(offloop, "PROBE_EVERY_S", 0.05)
    monkeypatch.setattr(offloop, "PROBE_WITHIN_S", 0.1)
    db = Database(deadline_s=5)  # the probe waits for the lock, longer than PROBE_WITHIN_S
    watch = asyncio.create_task(db.watch(store.probe))

    async def until(answers: bool) -> None:
        async with asyncio.timeout(30):
            while db.answers is not answers:
                await asyncio.sleep(0.01)

    try:
        await until(True)
        holder = _locked(store)
        await until(False)  # the probe waits for the lock: degraded, not (yet) away
        assert not db.away
        holder.execute("ROLLBACK")
        await until(True)
    finally:
        watch.cancel()
        db.close()


async def test_with_the_check_on_a_statement_on_the_event_loop_fails_and_one_in_the_pool_runs(
    store,
):
    """What the test suite's greens run with (GREEN_DATABASE_CHECK_OFF_LOOP): the loop's own
    thread may not wait on the database; the pool's threads may."""
    forbid_on_event_loop(store.engine)
    db = Database(deadline_s=1.0)
    try:
        with pytest.raises(StatementOnEventLoop, match="on the event loop"):
            store.count_unfinished()
        assert await db.run(store.count_unfinished) == 0
    finally:
        db.close()


async def test_a_request_never_queues_behind_the_work_no_request_waits_on(monkeypatch):
    """A running task's records and the replica's leases go through run_behind: with its
    threads all busy (and more queued behind them), a request's call still runs at once."""
    monkeypatch.setattr(offloop, "BEHIND_THREADS", 1)
    db = Database(deadline_s=5.0)
    release = threading.Event()
    try:
        busy = asyncio.ensure_future(db.run_behind(release.wait, 10))
        queued = asyncio.ensure_future(db.run_behind(lambda: "queued"))
        assert await db.run(lambda: "the request's") == "the request's"
        assert not busy.done() and not queued.done()  # still held up behind the busy one
        release.set()
        assert await busy is True and await queued == "queued"
    finally:
        release.set()
        db.close()


def test_the_databases_threads_are_all_started_with_it() -> None:
    """They started as calls first needed them: an outage (every call waiting its deadline) left
    a replica with threads it had not had before, which a soak reads as growth."""
    before = set(threading.enumerate())
    db = Database(deadline_s=1.0)
    try:
        names = [t.name.rsplit("_", 1)[0] for t in set(threading.enumerate()) - before]
        assert sorted(names) == sorted(
            ["green-db"] * offloop.THREADS + ["green-db-behind"] * offloop.BEHIND_THREADS
        )
    finally:
        db.close()


async def test_a_write_under_way_past_its_callers_deadline_is_waited_for_but_not_for_ever(
    running_task_store: TaskStore, impatient_db: Database
) -> None:
    """``run_to_end`` waits for a call under way at the deadline (it lands when the lock goes),
    and gives up once the database's own deadlines would have ended it: the lock outlasts
    them here (the store waits 5 s for a lock; the caller's deadline is 0.2 s)."""
    store = running_task_store
    holder = _locked(store)
    try:
        asyncio.get_running_loop().call_later(0.5, holder.execute, "ROLLBACK")
        await impatient_db.run_to_end(store.add_all, [task(2)])
        assert store.get("t002") is not None
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(DatabaseUnavailable, match="under way for 1 s"):
            await impatient_db.run_to_end(store.add_all, [task(3)])
    finally:
        holder.execute("ROLLBACK")
