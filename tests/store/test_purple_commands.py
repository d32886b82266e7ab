"""Purple's copy of a run's commands, on SQLite and on a real PostgreSQL server: each append
moves the task's counter on and adds one row numbered by it; an unknown task records nothing."""

from __future__ import annotations

from sqlmodel import Session, select

from services.purple.commands import CommandRecord
from services.purple.store.crud import PurpleStore, make_engine
from services.purple.store.models import PurpleCommand, PurpleTask


def test_appended_commands_are_numbered_by_the_tasks_counter(database_url):
    store = PurpleStore(make_engine(database_url))
    with Session(store.engine) as s:
        s.add(PurpleTask(id="ctx-1", green_url="http://green", policy="analyst", status="working"))
        s.add(PurpleTask(id="ctx-2", green_url="http://green", policy="analyst", status="working"))
        s.commit()
    ran = [
        CommandRecord(step=1, command="ls /workspace", exit_code=0, duration_s=0.012345),
        CommandRecord(step=2, command="sleep 100", exit_code=-1, timed_out=True, duration_s=1.5),
        CommandRecord(step=3, command="false", exit_code=1),
    ]
    for record in ran:
        store.append_command("ctx-1", record)
    store.append_command("ctx-2", CommandRecord(step=1, command="true", exit_code=0))
    store.append_command("unknown", CommandRecord(step=1, command="true", exit_code=0))

    rows = store.commands("ctx-1")
    assert [(r.seq, r.command, r.exit_code, r.timed_out) for r in rows] == [
        (1, "ls /workspace", 0, False),
        (2, "sleep 100", -1, True),
        (3, "false", 1, False),
    ]
    assert rows[0].duration_s == 0.0123 and rows[1].duration_s == 1.5
    assert all(r.created_at is not None for r in rows)
    first, other = store.get("ctx-1"), store.get("ctx-2")
    assert first is not None and first.command_count == 3
    assert other is not None and other.command_count == 1
    assert [r.seq for r in store.commands("ctx-2")] == [1]
    with Session(store.engine) as s:
        assert s.exec(select(PurpleCommand).where(PurpleCommand.task_id == "unknown")).all() == []
    store.engine.dispose()
