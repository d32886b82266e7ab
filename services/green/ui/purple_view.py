"""GET /ui/tasks/{id}/trajectory: purple's trajectory of a task, fetched from purple's REST API.

Green links to it when it can reach purple; otherwise the page says so and gives the URL. The
page's JSON link goes through green (``/ui/tasks/{id}/trajectory.json``): purple's own address
is often one only green's network knows (``http://purple:9019`` under compose), so it is shown
as text, never as a link a browser would follow. A purple is not trusted: its answer is read
with a total size limit (GREEN_TRAJECTORY_MAX_BYTES) and a total time limit
(GREEN_TRAJECTORY_TIMEOUT_S), not just a timeout between chunks, and the page says what was
cut; at most MAX_STEPS_SHOWN steps are shown, and every field is checked for its type before
it is shown.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import httpx
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response

from services.green.live_task import TaskNotFound
from services.green.ui.auth import require_page
from services.green.ui.templating import render
from services.shared.http import async_client

router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_page)])
MAX_STEPS_SHOWN = 500


class Cut(Exception):
    """The trajectory was not read to its end (too large, too slow): what was cut, as a sentence."""


async def _read_bounded(url: str, max_bytes: int) -> tuple[int, str, bytes]:
    async with (
        async_client(timeout=httpx.Timeout(10.0)) as client,
        client.stream("GET", url) as resp,
    ):
        body, size = [], 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise Cut(
                    f"purple's trajectory at {url} is larger than {max_bytes:,} bytes "
                    "(GREEN_TRAJECTORY_MAX_BYTES): green stopped reading it there and shows "
                    "none of it; read it from purple directly"
                )
            body.append(chunk)
        return resp.status_code, resp.headers.get("content-type", ""), b"".join(body)


async def fetch_trajectory(
    purple_url: str, task_id: str, max_bytes: int = 8 * 1024**2, timeout_s: float = 15.0
) -> tuple[dict[str, Any] | None, str]:
    """(trajectory, its URL) or (None, why not)."""
    url = f"{purple_url.rstrip('/')}/tasks/{task_id}/trajectory"
    try:
        async with asyncio.timeout(timeout_s):
            code, _, raw = await _read_bounded(url, max_bytes)
    except Cut as exc:
        return None, str(exc)
    except TimeoutError:
        return None, (
            f"purple's trajectory at {url} did not arrive within {timeout_s:g} s "
            "(GREEN_TRAJECTORY_TIMEOUT_S): green stopped reading it and shows none of it"
        )
    except httpx.HTTPError as exc:
        return None, f"purple is not reachable at {url} ({type(exc).__name__})"
    if code != 200:
        text = raw[:300].decode("utf-8", "replace")
        return None, f"purple answered {code} at {url}: {text}"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None, f"purple's answer at {url} is not JSON"
    if not isinstance(data, dict):
        return None, f"purple's answer at {url} is not a trajectory (a JSON object)"
    return shown(data), url


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
        step = {k: _number(s.get(k)) for k in ("tokens_in", "tokens_out", "cost", "llm_seconds")}
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
    try:
        return await request.app.state.orchestrator.get(task_id)
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None


async def _fetch(request: Request, task: Any) -> tuple[dict[str, Any] | None, str]:
    settings = request.app.state.orchestrator.settings
    return await fetch_trajectory(
        task.purple_url, task.id, settings.trajectory_max_bytes, settings.trajectory_timeout_s
    )


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
