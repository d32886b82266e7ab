"""Green's migrations on SQLite and on a real PostgreSQL server: a fresh database
reaches head and matches the models, a database made by the pre-migration code keeps its rows,
and replicas that start together on one empty database all succeed."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

from services.green.store import db as green_db
from services.green.store.crud import TaskStore
from services.green.store.models import TaskStatus
from services.shared.db import connect_engine
from services.shared.migrate import alembic_config, current, head, migration_lock, new_revision

DATA = Path(__file__).parent / "data"
MIGRATIONS = green_db.MIGRATIONS


def load_main_schema(url: str, service: str) -> None:
    """Make the tables as ``create_all`` of the pre-migration code did (captured DDL)."""
    engine = connect_engine(url)
    sql = (DATA / f"main-{service}-{engine.dialect.name}.sql").read_text()
    with engine.begin() as conn:
        for statement in sql.split(";\n"):
            body = "\n".join(x for x in statement.splitlines() if not x.startswith("--")).strip()
            if body:
                conn.exec_driver_sql(body)
    engine.dispose()


def test_a_fresh_database_reaches_head_and_matches_the_models(database_url):
    engine = green_db.make_engine(database_url)
    assert current(engine) == head(MIGRATIONS)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == [], f"the models and the migrations differ: write a revision ({diff})"


def test_migrations_go_down_to_nothing_and_up_again(database_url):
    engine = green_db.make_engine(database_url)
    with migration_lock(engine, MIGRATIONS) as conn:
        command.downgrade(alembic_config(MIGRATIONS, conn), "base")
        conn.commit()
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    green_db.make_engine(database_url)
    assert current(engine) == head(MIGRATIONS)


def test_a_green_database_made_before_migrations_keeps_its_tasks(database_url):
    load_main_schema(database_url, "green")
    old = connect_engine(database_url)
    with old.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO task_contexts (id, kind, arvo_id, status, purple_url, created_at,"
                " updated_at, max_steps, task_timeout_s, command_timeout_s, steps, tokens_in,"
                " tokens_out, cost, submissions, owner, scores) VALUES (:id, 'arvo', '10055',"
                " 'completed', 'http://purple', :now, :now, 30, 600, 60, 2, 0, 0, 0.5, 1,"
                " 'green', :scores)"
            ),
            {"id": "old-task", "now": "2026-01-02 03:04:05", "scores": '{"file@1": 1.0}'},
        )
        conn.execute(
            text(
                "INSERT INTO commands (task_id, seq, command, exit_code, duration_s, timed_out,"
                " truncated, output, created_at) VALUES ('old-task', 1, 'ls', 0, 0.1, false,"
                " false, 'src', :now)"
            ),
            {"now": "2026-01-02 03:04:06"},
        )
    assert current(old) is None
    old.dispose()

    engine = green_db.make_engine(database_url)  # what green does at start-up
    assert current(engine) == head(green_db.MIGRATIONS)
    store = TaskStore(engine)
    task = store.get("old-task")
    assert task is not None and task.status == TaskStatus.completed
    assert (
        task.ref_id == "10055"
        and str(task.ref) == "arvo:10055"
        and task.scores == {"file@1": 1.0}
        and task.cost == 0.5
    )
    assert [c.command for c in store.commands("old-task")] == ["ls"]
    assert task.bug == "arvo:10055"
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []


def test_tasks_recorded_before_bugs_were_named_get_the_bug_their_kind_asks_about(database_url):
    """Revision 0006 names each existing task's bug: the three ARVO kinds' tasks of one id share
    ``arvo:<id>`` (a reproduce task's level is not part of it); another kind's is its reference."""
    engine = green_db.make_engine(database_url)
    with migration_lock(engine, green_db.MIGRATIONS) as conn:
        command.downgrade(alembic_config(green_db.MIGRATIONS, conn), "0005")
        conn.commit()
    rows = {"t1": ("arvo", "7"), "t2": ("arvo-poc", "7-l2"), "t3": ("arvo-fix", "7"),
            "t4": ("swebench", "a__b-1"), "t5": ("arvo", "8")}  # fmt: skip
    with engine.begin() as conn:
        for task_id, (kind, ref_id) in rows.items():
            conn.execute(
                text(
                    "INSERT INTO task_contexts (id, kind, ref_id, status, purple_url, created_at,"
                    " updated_at, max_steps, task_timeout_s, command_timeout_s, steps,"
                    " tokens_in, tokens_out, cost, submissions, owner) VALUES (:id, :kind,"
                    " :ref, 'running', 'http://purple', :now, :now, 30, 600, 60, 0, 0, 0, 0, 0,"
                    " 'green')"
                ),
                {"id": task_id, "kind": kind, "ref": ref_id, "now": "2026-01-02 03:04:05"},
            )
    engine = green_db.make_engine(database_url)  # green's start-up migrates to head
    store = TaskStore(engine)
    assert {t: store.get(t).bug for t in rows} == {  # type: ignore[union-attr]
        "t1": "arvo:7", "t2": "arvo:7", "t3": "arvo:7", "t4": "swebench:a__b-1", "t5": "arvo:8",
    }  # fmt: skip
    assert store.unfinished_bugs({"arvo:7", "arvo:9", "swebench:a__b-1"}) == {
        "arvo:7",
        "swebench:a__b-1",
    }


def test_replicas_starting_together_on_an_empty_database_all_succeed(database_url):
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        try:
            barrier.wait()
            green_db.make_engine(database_url).dispose()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert current(connect_engine(database_url)) == head(MIGRATIONS)


def test_make_migration_writes_the_next_numbered_revision(tmp_path):
    """``make migration``: against models equal to head the draft is empty, numbered head + 1."""
    from services.shared.migrate import main

    location = tmp_path / "migrations"
    shutil.copytree(green_db.MIGRATIONS, location, ignore=shutil.ignore_patterns("__pycache__"))
    before = head(location)
    after = f"{int(before) + 1:04d}"
    path = new_revision(location, "nothing changed")
    assert path.name == f"{after}_nothing_changed.py"
    body = path.read_text()
    assert f"down_revision = '{before}'" in body and "op." not in body.split("def upgrade")[1]
    assert head(location) == after
    with pytest.raises(SystemExit):
        main(["blue", "current", "--url", "sqlite://"])


@pytest.mark.parametrize("url", ["postgresql://u@db:5432/green", "postgres://u@db/green"])
def test_a_plain_postgresql_url_means_the_shipped_driver(url):
    """SQLAlchemy's default for ``postgresql://`` is psycopg2, which the extra does not bring."""
    engine = connect_engine(url)  # no connection is made
    assert engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
