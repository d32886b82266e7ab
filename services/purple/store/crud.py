"""Queries for purple's task contexts (every write commits)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select, update

from services.purple.commands import CommandRecord
from services.purple.store.models import PurpleCommand, PurpleTask, utcnow
from services.shared.migrate import make_engine as _make_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def make_engine(url: str) -> Engine:
    """The engine, its schema brought to head by the migrations shipped beside this module."""
    return _make_engine(url, MIGRATIONS)


class PurpleStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, task: PurpleTask) -> None:
        with Session(self.engine) as s:
            s.merge(task)
            s.commit()

    def get(self, task_id: str) -> PurpleTask | None:
        with Session(self.engine) as s:
            return s.get(PurpleTask, task_id)

    def update(self, task_id: str, **fields: Any) -> None:
        with Session(self.engine) as s:
            row = s.get(PurpleTask, task_id)
            if row is None:
                return
            for k, v in fields.items():
                setattr(row, k, v)
            row.updated_at = utcnow()
            s.add(row)
            s.commit()

    def append_command(self, task_id: str, record: CommandRecord) -> None:
        """The store's copy of a run's command record: one insert and one counter update, in
        one transaction (O(1) per command)."""
        with Session(self.engine) as s:
            count = s.exec(select(PurpleTask.command_count).where(PurpleTask.id == task_id)).first()
            if count is None:
                return
            s.add(
                PurpleCommand(
                    task_id=task_id,
                    seq=count + 1,
                    command=record.command,
                    exit_code=record.exit_code,
                    duration_s=round(record.duration_s, 4),
                    timed_out=record.timed_out,
                )
            )
            s.exec(
                update(PurpleTask)
                .where(PurpleTask.id == task_id)
                .values(command_count=count + 1, updated_at=utcnow())
            )
            s.commit()

    def commands(self, task_id: str) -> list[PurpleCommand]:
        with Session(self.engine) as s:
            q = select(PurpleCommand).where(PurpleCommand.task_id == task_id)
            return list(s.exec(q.order_by(PurpleCommand.seq)).all())

    def list(self, limit: int = 100) -> list[PurpleTask]:
        with Session(self.engine) as s:
            q = select(PurpleTask).order_by(PurpleTask.created_at.desc()).limit(limit)
            return list(s.exec(q).all())

    def fail_unfinished(self, reason: str) -> None:
        with Session(self.engine) as s:
            for row in s.exec(select(PurpleTask).where(PurpleTask.status == "working")):
                row.status, row.reason, row.finished_at = "failed", reason, utcnow()
                s.add(row)
            s.commit()
