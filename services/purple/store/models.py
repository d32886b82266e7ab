"""The seed's purple ``task_contexts``: messages, command history, counters, status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


class PurpleModel(SQLModel, registry=registry()):
    """Purple's own metadata: its ``task_contexts`` never meets green's, even in one process."""


class PurpleTask(PurpleModel, table=True):
    __tablename__ = "task_contexts"

    id: str = Field(primary_key=True)
    """Green's task id, which is also the A2A context id."""
    a2a_task_id: str | None = None
    green_url: str
    policy: str
    status: str = "working"
    """working | submitted | failed | cancelled"""
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    step_count: int = 0
    command_count: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    reason: str | None = None
    command_history: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    messages: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    submission: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    trajectory_path: str | None = None
