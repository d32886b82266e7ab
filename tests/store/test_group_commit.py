"""services/green/store/group_commit.py on the real store (SQLite and PostgreSQL): inserts made
while one is under way share the next transaction, all or none; every caller learns its outcome;
a caller that stops waiting does not take its rows out. And the store's insert returns its tasks
as the database keeps them."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.exc import IntegrityError

from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.group_commit import GroupCommit
from services.green.store.models import Task
from services.green.store.offloop import Database
from tests.store.test_queue import task


class Inserts:
    """The store's insert, off the loop, recording each transaction's rows; ``hold`` keeps the
    next transaction open until it is set."""

    def __init__(self, store: TaskStore) -> None:
        self.store, self.db = store, Database(5.0)
        self.transactions: list[list[str]] = []
        self.started = asyncio.Event()
        self.hold: asyncio.Event | None = None

    async def __call__(self, rows: list[Task]) -> None:
        self.transactions.append([t.id for t in rows])
        self.started.set()
        if self.hold is not None:
            await self.hold.wait()
            self.hold = None
        await self.db.run(self.store.add_all, rows)

    def stored(self) -> list[str]:
        return sorted(t.id for t in self.store.list(limit=500)[0])


@pytest.fixture
def inserts(database_url) -> Inserts:
    return Inserts(TaskStore(make_engine(database_url)))


async def test_callers_arriving_together_share_one_transaction(inserts):
    group = GroupCommit(inserts)
    await asyncio.gather(*(group([task(i)]) for i in range(20)))
    assert len(inserts.transactions) == 1
    assert inserts.stored() == [f"t{i:03d}" for i in range(20)]


async def test_callers_arriving_during_a_transaction_share_the_next(inserts):
    group = GroupCommit(inserts)
    inserts.hold = asyncio.Event()
    first = asyncio.create_task(group([task(0)]))
    await inserts.started.wait()  # the first transaction is under way
    rest = [asyncio.create_task(group([task(i), task(i + 10)])) for i in (1, 2, 3)]
    await asyncio.sleep(0.05)
    inserts.hold.set()
    await asyncio.gather(first, *rest)
    assert inserts.transactions == [["t000"], ["t001", "t011", "t002", "t012", "t003", "t013"]]
    assert len(inserts.stored()) == 7


async def test_a_failing_transaction_fails_each_of_its_callers_and_stores_none_of_them(inserts):
    """One transaction, all or none: a row the database refuses (a duplicate id, an error not
    in ``alone_on``) fails every caller that shares it; the callers of the next transaction are
    not affected."""
    group = GroupCommit(inserts)
    await group([task(0)])
    outcomes = await asyncio.gather(group([task(1)]), group([task(0)]), return_exceptions=True)
    assert all(isinstance(o, IntegrityError) for o in outcomes), outcomes
    assert inserts.stored() == ["t000"]
    await group([task(2)])
    assert inserts.stored() == ["t000", "t002"]


async def test_a_row_refused_by_itself_fails_only_its_callers_request(inserts):
    """A task id already taken (a client's id posted again) fails the transaction it shares;
    with ``alone_on``, that transaction's callers are sent again one by one, and only the one
    whose row the database refuses gets the error."""
    group = GroupCommit(inserts, alone_on=(IntegrityError,))
    await group([task(0)])
    outcomes = await asyncio.gather(
        group([task(1)]), group([task(0)]), group([task(2), task(3)]), return_exceptions=True
    )
    assert outcomes[0] is None and outcomes[2] is None, outcomes
    assert isinstance(outcomes[1], IntegrityError)
    assert inserts.stored() == ["t000", "t001", "t002", "t003"]
    assert inserts.transactions[1:] == [
        ["t001", "t000", "t002", "t003"],
        ["t001"],
        ["t000"],
        ["t002", "t003"],
    ]


async def test_a_caller_that_stops_waiting_still_has_its_rows_stored(inserts):
    group = GroupCommit(inserts)
    inserts.hold = asyncio.Event()
    gone = asyncio.create_task(group([task(0)]))
    await inserts.started.wait()
    stays = asyncio.create_task(group([task(1)]))
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    inserts.hold.set()
    await stays
    assert inserts.stored() == ["t000", "t001"]


def test_the_inserted_tasks_are_as_the_database_keeps_them(database_url):
    """``add_all`` reads its rows back in one query before its commit (not one per task after
    it): each task it returns is the one a later read finds, field for field."""
    store = TaskStore(make_engine(database_url))
    tasks = [task(i) for i in range(3)]
    store.add_all(tasks)
    for t in tasks:
        stored = store.get(t.id)
        assert stored is not None and t.model_dump() == stored.model_dump()
        assert t.bug == f"arvo:{t.ref_id}"
