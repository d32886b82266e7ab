"""GET /tasks/{id}/trajectory: a task's trajectory, step by step, read-only.

Built from the events files the agent appends as it works (``<stem>.events.jsonl``, named by
the task's record in :mod:`services.purple.task_index`), so it is available while the task runs:
the prompts the agent rendered from its templates, then per step the LLM messages, the tool
calls, the commands and their outputs, and the tokens and cost of the model calls. A line being
written as it is read is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from services.purple.card import VERSION
from services.purple.task_index import TaskIndex, TaskRecord
from services.shared.trajectory import TrajectoryStep, TrajectoryView

router = APIRouter(tags=["tasks"])
MAX_EVENTS = 20_000
"""Events read from one file (a long run has a few thousand)."""


def read_events(path: Path) -> list[dict[str, Any]]:
    """The whole events of one file (at most :data:`MAX_EVENTS`)."""
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if len(out) >= MAX_EVENTS:
                break
            try:
                event = json.loads(line)
            except ValueError:  # a line being written right now
                continue
            if isinstance(event, dict):
                out.append(event)
    return out


def group_steps(events: list[dict[str, Any]]) -> list[TrajectoryStep]:
    """Events in order -> steps; an event without a ``step`` belongs to the current one."""
    steps: dict[int, TrajectoryStep] = {}
    current = 0
    for ev in events:
        if isinstance(ev.get("step"), int):
            current = ev["step"]
        step = steps.setdefault(current, TrajectoryStep(step=current))
        kind = ev.get("type")
        if kind == "message":
            msg = {k: v for k, v in ev.items() if k not in ("type", "step")}
            step.messages.append(msg)
            step.tool_calls += msg.get("tool_calls") or []
        elif kind == "llm_call":
            step.tokens_in += int(ev.get("tokens_in") or 0)
            step.tokens_out += int(ev.get("tokens_out") or 0)
            step.cost += float(ev.get("cost") or 0.0)
            step.llm_seconds += float(ev.get("duration_s") or 0.0)
            step.llm_calls.append({k: v for k, v in ev.items() if k not in ("type", "step")})
        elif kind == "command":
            step.commands.append({k: v for k, v in ev.items() if k != "type"})
        elif kind != "start":
            step.other.append(ev)
    return [steps[k] for k in sorted(steps)]


def _model_name(model: dict[str, Any]) -> str | None:
    """The model a start event's ``model`` (the LLM's ``serialize()``) names."""
    name = model.get("model") or model.get("name")
    return name if isinstance(name, str) else None


def record_or_404(request: Request, task_id: str) -> tuple[TaskIndex, TaskRecord]:
    """The app's task index and the record of ``task_id`` (404 when there is none)."""
    index: TaskIndex = request.app.state.index
    record = index.get(task_id)
    if record is None:
        raise HTTPException(404, f"no task {task_id}")
    return index, record


# Plain ``def`` routes (here and in tasks.py): they read files, so FastAPI runs them in its
# thread pool, never on purple's event loop.
@router.get("/tasks/{task_id}/trajectory", response_model=TrajectoryView)
def get_trajectory(task_id: str, request: Request) -> TrajectoryView:
    index, row = record_or_404(request, task_id)
    files = [path for path, _ in index.files(row)]
    events = [ev for path in files for ev in read_events(path)]
    steps = group_steps(events)
    starts = [ev for ev in events if ev.get("type") == "start" and ev.get("prompts")]
    model = starts[-1].get("model") if starts else None
    return TrajectoryView(
        task_id=task_id,
        policy=row.policy,
        status=row.status,
        files=[p.name for p in files],
        agent_version=VERSION,
        model=_model_name(model) if isinstance(model, dict) else None,
        prompts=starts[-1]["prompts"] if starts else {},
        steps=steps,
        tokens_in=sum(s.tokens_in for s in steps),
        tokens_out=sum(s.tokens_out for s in steps),
        cost=round(sum(s.cost for s in steps), 6),
    )
