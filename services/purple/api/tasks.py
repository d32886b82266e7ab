"""GET /tasks and GET /tasks/{id}: the tasks purple took, from their records
(:mod:`services.purple.task_index`) and their trajectory files (the messages, the commands)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from services.purple.api.trajectory import read_events, record_or_404
from services.purple.task_index import TaskFields, TaskIndex, TaskRecord

router = APIRouter(tags=["tasks"])


class PurpleTask(TaskFields):
    id: str
    """Green's task id, which is also the A2A context id."""
    messages: list[dict[str, Any]] | None = None
    """The final conversation (from the trajectory's final file, once the task ended)."""
    submission: dict[str, Any] | None = None


class PurpleCommand(BaseModel):
    """One command the agent ran through green, from its trajectory (never summarized away)."""

    id: int
    """Its place among the task's commands (the same as ``seq``)."""
    task_id: str
    seq: int
    command: str
    exit_code: int
    duration_s: float
    timed_out: bool = False
    created_at: datetime
    """When purple recorded it (after it ran)."""


class PurpleTaskView(PurpleTask):
    """``GET /tasks/{id}``: the task with its command history."""

    command_history: list[PurpleCommand] = []


def _messages(trajectory_path: str | None) -> list[dict[str, Any]] | None:
    if not trajectory_path:
        return None
    try:
        with open(trajectory_path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data.get("messages") if isinstance(data, dict) else None


def _task(record: TaskRecord) -> PurpleTask:
    fields = record.model_dump(exclude={"trajectories"})
    return PurpleTask(**fields, messages=_messages(record.trajectory_path))


def commands_of(index: TaskIndex, record: TaskRecord) -> list[PurpleCommand]:
    """The task's commands in the order they ran, from the command events of its files."""
    out: list[PurpleCommand] = []
    for path, started_at in index.files(record):
        for ev in read_events(path):
            if ev.get("type") != "command":
                continue
            try:
                seq = len(out) + 1
                out.append(
                    PurpleCommand(
                        id=seq,
                        task_id=record.id,
                        seq=seq,
                        command=ev["command"],
                        exit_code=ev["exit_code"],
                        duration_s=round(float(ev.get("duration_s") or 0.0), 4),
                        timed_out=bool(ev.get("timed_out")),
                        created_at=started_at + timedelta(seconds=float(ev.get("t") or 0.0)),
                    )
                )
            except (KeyError, TypeError, ValueError):
                continue  # not a command record
    return out


@router.get("/tasks", response_model=list[PurpleTask])
def list_tasks(request: Request, limit: int = 100) -> list[PurpleTask]:
    index: TaskIndex = request.app.state.index
    tasks = []
    for record in index.recent(min(max(limit, 1), 1000)):
        task = _task(record)
        if task.status == "working":  # its count is written when it ends
            task.command_count = len(commands_of(index, record))
        tasks.append(task)
    return tasks


@router.get("/tasks/{task_id}", response_model=PurpleTaskView)
def get_task(task_id: str, request: Request) -> PurpleTaskView:
    index, record = record_or_404(request, task_id)
    history = commands_of(index, record)
    view = PurpleTaskView(**_task(record).model_dump(), command_history=history)
    if view.status == "working":
        view.command_count = len(history)
    return view
