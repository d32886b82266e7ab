"""The shared queue on SQLite and on a real PostgreSQL server: claims, leases, take-over and
cancel requests, with replicas (threads, each on its own connections) racing for the same rows."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import create_engine, text

from services.green.ledger.queue import TaskQueue
from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.models import Task, TaskStatus, utcnow

T0 = utcnow()


def task(i: int, status: TaskStatus = TaskStatus.queued, **fields) -> Task:
    return Task(
        id=f"t{i:03d}",
        ref_id=str(1000 + i),
        purple_url="http://purple",
        max_steps=10,
        task_timeout_s=60,
        command_timeout_s=10,
        status=status,
        created_at=T0 + timedelta(seconds=i),
        **fields,
    )


@pytest.fixture
def store(database_url) -> TaskStore:
    return TaskStore(make_engine(database_url))


def race(n: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` in ``n`` threads released at the same instant; their results."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    return results


def test_claim_takes_the_oldest_queued_tasks_and_leases_them(store: TaskStore):
    q = TaskQueue(store.engine)
    for i, status in enumerate([TaskStatus.running, TaskStatus.queued, TaskStatus.queued]):
        store.add(task(i, status))
    store.add(task(3, kind="swebench"))
    until = T0 + timedelta(minutes=1)
    assert q.claim("green-a", until, kinds=["arvo"]) == ["t001"]
    assert q.claim("green-b", until, limit=5) == ["t002", "t003"]
    assert q.claim("green-b", until) == []
    claimed = store.get("t001")
    assert claimed.status == TaskStatus.preparing and claimed.owner == "green-a"
    assert claimed.lease_until.replace(tzinfo=None) == until.replace(tzinfo=None)


def test_replicas_claiming_together_never_take_a_task_twice(store: TaskStore):
    q = TaskQueue(store.engine)
    for i in range(40):
        store.add(task(i))

    def drain(i: int) -> list[str]:
        taken: list[str] = []
        while got := q.claim(f"green-{i}", T0 + timedelta(minutes=1), limit=2):
            taken += got
        return taken

    results = race(6, drain)
    counts = Counter(t for taken in results for t in taken)
    assert len(counts) == 40 and set(counts.values()) == {1}
    owners = {t.id: t.owner for t in store.list(limit=100)[0]}
    for i, taken in enumerate(results):
        assert all(owners[t] == f"green-{i}" for t in taken)


def test_a_claim_skips_rows_another_replica_has_locked(postgres):
    """SKIP LOCKED: while one transaction holds the oldest queued row, a claim takes the next
    one at once instead of waiting (a waiting claim would hit the statement timeout)."""
    url = postgres.new_database()
    store = TaskStore(make_engine(url))
    store.add(task(0))
    store.add(task(1))
    with store.engine.connect() as holder:
        holder.execute(text("SELECT id FROM task_contexts WHERE id = 't000' FOR UPDATE"))
        impatient = create_engine(url, connect_args={"options": "-c statement_timeout=3000"})
        assert TaskQueue(impatient).claim("green-b", T0 + timedelta(minutes=1)) == ["t001"]
        holder.rollback()
        impatient.dispose()


def test_leases_renew_expire_and_are_taken_over_by_exactly_one_replica(store: TaskStore):
    q = TaskQueue(store.engine)
    for i in range(3):
        store.add(task(i))
    assert q.claim("dead", T0 + timedelta(seconds=30), limit=2) == ["t000", "t001"]
    assert q.claim("alive", T0 + timedelta(seconds=30)) == ["t002"]
    assert q.renew("dead", ["t001"], T0 + timedelta(hours=1)) == {"t001"}
    assert q.renew("alive", ["t000", "t002"], T0 + timedelta(seconds=30)) == {"t002"}
    later = T0 + timedelta(minutes=1)
    assert [(e.id, e.owner) for e in q.expired("alive", later)] == [("t000", "dead")]
    assert q.expired("dead", later)[0].id == "t002"

    wins = race(
        8,
        lambda i: q.take_over(
            f"replica-{i}", "t000", "dead", now=later, until=later + timedelta(seconds=30),
            status=TaskStatus.failed, error="its replica died", failure_kind="infra",
        ),
    )  # fmt: skip
    assert wins.count(True) == 1
    taken = store.get("t000")
    assert taken.owner == f"replica-{wins.index(True)}" and taken.status == TaskStatus.failed
    assert q.renew("dead", ["t000", "t001"], later) == {"t001"}, "the dead owner lost t000"
    assert not q.take_over("x", "t001", "dead", now=later, until=later), "t001 was renewed"


def test_a_replica_whose_task_was_taken_over_writes_nothing_over_its_end(store: TaskStore):
    """A replica frozen past its lease wakes up and moves on with its task: the store refuses."""
    q = TaskQueue(store.engine)
    store.add(task(0))
    assert q.claim("frozen", T0 + timedelta(seconds=30)) == ["t000"]
    assert store.update_held("t000", "frozen", status=TaskStatus.running)
    later = T0 + timedelta(minutes=1)
    assert q.take_over(
        "other", "t000", "frozen", now=later, until=later,
        status=TaskStatus.failed, end_reason="replica_lost", failure_kind="infra",
    )  # fmt: skip
    assert not store.update_held("t000", "frozen", status=TaskStatus.evaluating, steps=9)
    assert not store.update_held("t000", "other", status=TaskStatus.completed)  # it has ended
    ended = store.get("t000")
    assert (ended.status, ended.end_reason, ended.steps) == (TaskStatus.failed, "replica_lost", 0)


def test_cancel_through_any_replica(store: TaskStore):
    q = TaskQueue(store.engine)
    for i in range(3):
        store.add(task(i))
    q.claim("owner", T0 + timedelta(minutes=1))
    assert q.request_cancel("t000") and q.cancel_requests("owner") == ["t000"]
    assert q.cancel_requests("someone-else") == []
    store.update("t000", status=TaskStatus.cancelled)
    assert q.cancel_requests("owner") == [] and not q.request_cancel("t000")
    assert not q.request_cancel("no-such-task")

    assert q.cancel_queued("t001") and store.get("t001").status == TaskStatus.cancelled
    assert q.claim("owner", T0 + timedelta(minutes=1)) == ["t002"], "a cancelled task stays out"
    assert not q.cancel_queued("t002"), "claimed first: ask its owner instead"


def test_a_cancel_and_a_claim_racing_for_a_queued_task_one_wins(store: TaskStore):
    q = TaskQueue(store.engine)
    for round_ in range(10):
        store.add(task(100 + round_))
        results = race(
            2,
            lambda i, r=round_: (
                q.cancel_queued(f"t{100 + r:03d}")
                if i == 0
                else bool(q.claim("green", T0 + timedelta(minutes=1)))
            ),
        )
        assert results.count(True) == 1, results


def test_a_release_gives_back_only_the_releasers_unstarted_claims(store: TaskStore):
    q = TaskQueue(store.engine)
    for i in range(3):
        store.add(task(i))
    until = T0 + timedelta(minutes=1)
    assert q.claim("green-a", until, limit=2) == ["t000", "t001"]
    assert q.claim("green-b", until) == ["t002"]
    store.update("t001", status=TaskStatus.running)  # started: not given back

    assert q.release("green-a", ["t000", "t001", "t002"]) == 1

    back = store.get("t000")
    assert back.status == TaskStatus.queued and back.lease_until is None
    assert store.get("t001").status == TaskStatus.running
    assert store.get("t002").owner == "green-b" and store.get("t002").status == TaskStatus.preparing
    assert q.claim("green-b", until) == ["t000"]
