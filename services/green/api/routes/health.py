"""GET /healthz: do the Docker engines answer, does the database (as its probe last saw it:
answered at once, even while the database is locked), which replica answers
(``instance``, ``url``). Anyone may ask (load balancers, purple); the details of the engine pool
(``engines``: addresses, load, errors) and of the image budget are the operator's: they go only
to a caller holding the operator token."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from services.green.api.deps import CallerDep, OrchestratorDep
from services.shared.task_ref import DEFAULT_KIND

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz(orch: OrchestratorDep, who: CallerDep, request: Request) -> JSONResponse:
    async def check(work) -> bool:
        try:
            async with asyncio.timeout(5):
                return bool(await work)
        except Exception:
            return False

    docker_ok = await check(orch.sandboxes.ping())
    db_ok = orch.db.answers  # its probe's last answer: this reads nothing from the database
    ok = docker_ok and db_ok
    body = {
        "status": "ok" if ok else "degraded",
        "docker": docker_ok,
        "database": db_ok,
        "instance": orch.settings.instance_name,
        "url": orch.settings.reachable_url(),
    }
    if not who.operator:  # the agent under test may call this: no infrastructure details
        return JSONResponse(body, status_code=200 if ok else 503)
    with contextlib.suppress(Exception):  # each engine of the pool: up or down, how busy
        async with asyncio.timeout(5):
            body["engines"] = await orch.sandboxes.engines()
    # containers whose removal failed (an engine away, or jammed on them): retried meanwhile
    body["containers_unremoved"] = len(orch.janitor.pending)
    if docker_ok:  # the disk budget of the default kind's task images, when it keeps one
        with contextlib.suppress(Exception):
            budget = request.app.state.datasets.images(DEFAULT_KIND)
            async with asyncio.timeout(5):
                body["images"] = await asyncio.to_thread(budget.budget_status)
    return JSONResponse(body, status_code=200 if ok else 503)
