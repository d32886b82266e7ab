"""TaskStore.page / run_tasks / commands_after on a real SQLite database."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.green.store.crud import UNFINISHED, TaskStore
from services.green.store.db import make_engine
from services.green.store.models import Command, Task, TaskStatus, utcnow


def make_task(i: int, status: TaskStatus, **fields) -> Task:
    return Task(
        id=f"t{i:04d}",
        ref_id=fields.pop("ref_id", "900001"),
        purple_url="http://purple",
        max_steps=10,
        task_timeout_s=60,
        command_timeout_s=10,
        status=status,
        created_at=utcnow() + timedelta(seconds=i),
        ground_truth={"files": [{"path": "secret.c"}]},
        **fields,
    )


@pytest.fixture
def store(tmp_path) -> TaskStore:
    store = TaskStore(make_engine(f"sqlite:///{tmp_path}/g.db"))
    statuses = list(TaskStatus)
    for i in range(70):
        store.add(
            make_task(
                i,
                statuses[i % len(statuses)],
                kind="swebench" if i % 10 == 0 else "arvo",
                ref_id=str(900001 + i % 3),
                assessment_id="run-a" if i < 20 else None,
            )
        )
    return store


def test_page_is_newest_first_and_counts_every_match(store: TaskStore):
    rows, total = store.page(limit=25)
    assert total == 70 and len(rows) == 25
    assert [r.id for r in rows[:3]] == ["t0069", "t0068", "t0067"]
    rows, _ = store.page(offset=50, limit=25)
    assert len(rows) == 20 and rows[-1].id == "t0000"


def test_page_rows_never_carry_the_ground_truth(store: TaskStore):
    rows, _ = store.page(limit=5)
    assert "ground_truth" not in rows[0]._fields and "submission" not in rows[0]._fields


def test_filters_combine(store: TaskStore):
    _, total = store.page(statuses=[TaskStatus.running])
    assert total == 10
    _, total = store.page(statuses=list(UNFINISHED))
    assert total == 40
    _, total = store.page(kind="swebench")
    assert total == 7
    _, total = store.page(ref_ids={"900001"})
    assert total == 24
    _, total = store.page(ref_ids=set())
    assert total == 0
    _, total = store.page(assessment_id="run-a")
    assert total == 20
    _, total = store.page(assessment_id="")
    assert total == 50
    rows, total = store.page(assessment_id="run-a", statuses=[TaskStatus.completed], kind="arvo")
    assert total == len(rows) == 3
    assert all(r.status == TaskStatus.completed and r.assessment_id == "run-a" for r in rows)


def test_run_tasks_and_commands_after(store: TaskStore):
    assert [t.id for t in store.run_tasks("run-a")][:2] == ["t0000", "t0001"]
    assert len(store.run_tasks("")) == 50
    for seq in (1, 2, 3):
        store.add_command(
            Command(task_id="t0001", seq=seq, command=f"c{seq}", exit_code=0, duration_s=0.1,
                    output="")
        )  # fmt: skip
    assert [c.seq for c in store.commands_after("t0001", 1)] == [2, 3]
    assert store.commands_after("t0001", 3) == []
    assert ("arvo", "900002") in store.distinct_ids()


def test_run_counts_group_by_status_and_failure_kind(tmp_path):
    store = TaskStore(make_engine(f"sqlite:///{tmp_path}/g.db"))
    for i, (status, kind) in enumerate(
        [(TaskStatus.failed, "infra"), (TaskStatus.failed, "agent"), (TaskStatus.failed, "agent"),
         (TaskStatus.completed, None), (TaskStatus.running, None)]
    ):  # fmt: skip
        store.add(make_task(i, status, assessment_id="r", failure_kind=kind, cost=0.5))
    rows = {(s.value, k): (n, c) for s, k, n, c in store.run_counts("r")}
    assert rows[("failed", "agent")] == (2, 1.0)
    assert rows[("failed", "infra")] == (1, 0.5)
    assert rows[("completed", None)] == (1, 0.5) and rows[("running", None)] == (1, 0.5)
    assert store.run_counts("") == []
