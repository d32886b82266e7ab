"""GET /ui/tasks/{id}/trajectory: purple's trajectory of a task, fetched from purple's REST API.

Green links to it when it can reach purple; otherwise the page says so and gives the URL. The
page's JSON link goes through green (``/ui/tasks/{id}/trajectory.json``): purple's own address
is often one only green's network knows (``http://purple:9019`` under compose), so it is shown
as text, never as a link a browser would follow.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response

from services.green.live_task import TaskNotFound
from services.green.ui.auth import require_page
from services.green.ui.templating import render

router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_page)])
PURPLE_TIMEOUT_S = 5.0


async def fetch_trajectory(purple_url: str, task_id: str) -> tuple[dict[str, Any] | None, str]:
    """(trajectory, its URL) or (None, why not)."""
    url = f"{purple_url.rstrip('/')}/tasks/{task_id}/trajectory"
    try:
        async with httpx.AsyncClient(timeout=PURPLE_TIMEOUT_S) as client:
            resp = await client.get(url)
    except httpx.HTTPError as exc:
        return None, f"purple is not reachable at {url} ({type(exc).__name__})"
    if resp.status_code != 200:
        return None, f"purple answered {resp.status_code} at {url}: {resp.text[:300]}"
    try:
        return resp.json(), url
    except ValueError:
        return None, f"purple's answer at {url} is not JSON"


def _task(request: Request, task_id: str) -> Any:
    try:
        return request.app.state.orchestrator.get(task_id)
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None


@router.get("/tasks/{task_id}/trajectory", response_class=HTMLResponse)
async def trajectory(task_id: str, request: Request) -> Response:
    task = _task(request, task_id)
    data, where = await fetch_trajectory(task.purple_url, task_id)
    return render(request, "trajectory.html", task=task, traj=data, where=where)


@router.get("/tasks/{task_id}/trajectory.json")
async def trajectory_json(task_id: str, request: Request) -> Response:
    """Purple's trajectory as purple gave it, fetched by green (502 when purple cannot say)."""
    data, where = await fetch_trajectory(_task(request, task_id).purple_url, task_id)
    if data is None:
        return JSONResponse({"detail": where}, status_code=status.HTTP_502_BAD_GATEWAY)
    return JSONResponse(data)
