"""The task page's events: every state the task went through, ``preparing`` included."""

from __future__ import annotations

from datetime import timedelta

from services.green.store.models import Task, TaskStatus, utcnow
from services.green.ui.views import timeline


def _task(status: TaskStatus, started: bool) -> Task:
    now = utcnow()
    return Task(id="t1", ref_id="900001", purple_url="http://p", max_steps=5, task_timeout_s=60,
                command_timeout_s=10, status=status, created_at=now,
                started_at=now + timedelta(seconds=3) if started else None,
                finished_at=now + timedelta(seconds=9) if status.terminal else None)  # fmt: skip


def test_an_ended_task_shows_it_was_prepared_between_queued_and_running():
    events = [e["status"] for e in timeline(_task(TaskStatus.completed, started=True))]
    assert events == ["queued", "preparing", "running", "completed"]


def test_a_task_being_prepared_shows_it_once():
    assert [e["status"] for e in timeline(_task(TaskStatus.preparing, started=False))] == [
        "queued",
        "preparing",
    ]
