"""GET /ui/tasks/{id}/trajectory: purple's trajectory of a task, fetched from purple's REST API.

Green links to it when it can reach purple; otherwise the page says so and gives the URL. The
page's JSON link goes through green (``/ui/tasks/{id}/trajectory.json``): purple's own address
is often one only green's network knows (``http://purple:9019`` under compose), so it is shown
as text, never as a link a browser would follow. Purple's answer is read within a size and a
time (``services.green.tasks.trajectory``), and the page says what was cut; at most MAX_STEPS_SHOWN
steps are shown, and every field is checked for its type before it is shown.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response

from services.green.tasks.live_task import TaskNotFound
from services.green.tasks.trajectory import fetch_trajectory
from services.green.ui.auth import disclosure, require_page
from services.green.ui.templating import render

router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_page)])
MAX_STEPS_SHOWN = 500


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def shown(data: dict[str, Any]) -> dict[str, Any]:
    """The trajectory as the page shows it: numbers are numbers, lists are lists of objects,
    and at most MAX_STEPS_SHOWN steps (``steps_cut`` says how many more there were)."""
    steps = _dicts(data.get("steps"))
    out = {
        "policy": str(data.get("policy", "")),
        "status": str(data.get("status", "")),
        "tokens_in": int(_number(data.get("tokens_in"))),
        "tokens_out": int(_number(data.get("tokens_out"))),
        "cost": _number(data.get("cost")),
        "steps_cut": max(0, len(steps) - MAX_STEPS_SHOWN),
        "steps": [],
    }
    for s in steps[:MAX_STEPS_SHOWN]:
        step: dict[str, Any] = {k: int(_number(s.get(k))) for k in ("tokens_in", "tokens_out")}
        step |= {k: _number(s.get(k)) for k in ("cost", "llm_seconds")}
        step["step"] = str(s.get("step", ""))
        step["messages"] = _dicts(s.get("messages"))
        for m in step["messages"]:
            m["role"] = str(m.get("role", ""))
            m["content"] = None if m.get("content") is None else str(m["content"])
            m["tool_calls"] = _dicts(m.get("tool_calls"))
            for c in m["tool_calls"]:
                c["function"] = c["function"] if isinstance(c.get("function"), dict) else None
        step["commands"] = _dicts(s.get("commands"))
        step["other"] = _dicts(s.get("other"))
        out["steps"].append(step)
    return out


async def _task(request: Request, task_id: str) -> Any:
    """The task, if this visitor may see its trajectory now (403 while a task of its bug is
    unfinished: the trajectory shows what its agent wrote, its answer)."""
    try:
        task = await request.app.state.orchestrator.get(task_id)
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None
    await disclosure(request).require_shown(task)
    return task


async def _fetch(request: Request, task: Any) -> tuple[dict[str, Any] | None, str]:
    settings = request.app.state.orchestrator.settings
    traj, where = await fetch_trajectory(
        task.purple_url, task.id, settings.trajectory_max_bytes, settings.trajectory_timeout_s
    )
    return (shown(traj.data) if traj is not None else None), where


@router.get("/tasks/{task_id}/trajectory", response_class=HTMLResponse)
async def trajectory(task_id: str, request: Request) -> Response:
    task = await _task(request, task_id)
    data, where = await _fetch(request, task)
    return render(request, "trajectory.html", task=task, traj=data, where=where)


@router.get("/tasks/{task_id}/trajectory.json")
async def trajectory_json(task_id: str, request: Request) -> Response:
    """Purple's trajectory as purple gave it, fetched by green (502 when purple cannot say)."""
    data, where = await _fetch(request, await _task(request, task_id))
    if data is None:
        return JSONResponse({"detail": where}, status_code=status.HTTP_502_BAD_GATEWAY)
    return JSONResponse(data)
