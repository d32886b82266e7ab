"""Purple's own ``task_contexts``: messages, command history, counters, status."""

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


class PurpleTaskBase(PurpleModel):
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
    trajectory_path: str | None = None


class PurpleTask(PurpleTaskBase, table=True):
    __tablename__ = "task_contexts"

    id: str = Field(primary_key=True)
    """Green's task id, which is also the A2A context id."""
    messages: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    submission: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class PurpleCommand(PurpleModel, table=True):
    """One command the agent ran through green (the history is never summarized away).
    One row per command: appending never rewrites what is already there."""

    __tablename__ = "commands"

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(foreign_key="task_contexts.id", index=True)
    seq: int
    command: str
    exit_code: int
    duration_s: float
    timed_out: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class PurpleTaskView(PurpleTaskBase):
    """``GET /tasks/{id}``: the task context with its command history."""

    id: str
    messages: list[dict[str, Any]] | None = None
    submission: dict[str, Any] | None = None
    command_history: list[PurpleCommand] = []
