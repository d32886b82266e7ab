"""Queries for purple's task contexts (every write commits)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from services.purple.store.models import PurpleModel, PurpleTask, utcnow
from services.shared.db import make_engine as _make_engine


def make_engine(url: str) -> Engine:
    return _make_engine(url, PurpleModel.metadata)


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

    def append_command(self, task_id: str, record: dict[str, Any]) -> None:
        with Session(self.engine) as s:
            row = s.get(PurpleTask, task_id)
            if row is None:
                return
            row.command_history = [*row.command_history, record]
            row.command_count = len(row.command_history)
            row.updated_at = utcnow()
            s.add(row)
            s.commit()

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
