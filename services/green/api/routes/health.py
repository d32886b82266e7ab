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
CHECK_S = 3.0
"""How long each check may take (they run at once): a slow engine or database is answered with
503 and a sentence before compose's health check gives up (4 s)."""


@router.get("/healthz")
async def healthz(orch: OrchestratorDep, who: CallerDep, request: Request) -> JSONResponse:
    async def check(what: str, work) -> str | None:
        """None when ``work`` says yes within CHECK_S; else a sentence (never the error's text:
        anyone may read it)."""
        try:
            async with asyncio.timeout(CHECK_S):
                return None if await work else f"{what} did not answer its check"
        except TimeoutError:
            return f"{what} did not answer within {CHECK_S:g} s (busy or unreachable)"
        except Exception:
            return f"{what} is unreachable"

    docker_why = await check("the Docker engine", orch.sandboxes.ping())
    # the database as its probe last saw it: this reads nothing from the database
    db_why = None if orch.db.answers else "the database did not answer its last check"
    ok = docker_why is None and db_why is None
    body = {
        "status": "ok" if ok else "degraded",
        "docker": docker_why is None,
        "database": db_why is None,
        "instance": orch.settings.instance_name,
        "url": orch.settings.reachable_url(),
    }
    if not ok:
        body["detail"] = "; ".join(w for w in (docker_why, db_why) if w)
    if not who.operator:  # the agent under test may call this: no infrastructure details
        return JSONResponse(body, status_code=200 if ok else 503)
    with contextlib.suppress(Exception):  # each engine of the pool: up or down, how busy
        async with asyncio.timeout(5):
            body["engines"] = await orch.sandboxes.engines()
    # containers whose removal failed (an engine away, or jammed on them): retried meanwhile
    body["containers_unremoved"] = len(orch.janitor.pending)
    boxes = orch.janitor.pending_of("judge")
    body["judging_boxes_unremoved"] = len(boxes)
    if boxes:
        body["unremoved"] = (
            f"green could not remove {len(boxes)} judging container(s) ({', '.join(boxes[:5])}): "
            "their engine did not remove them after a kill through the engine and through "
            "their cgroups; they take no slot, and green retries their removal"
        )
    if docker_why is None:  # the disk budget of the default kind's task images, when it keeps one
        with contextlib.suppress(Exception):
            budget = request.app.state.datasets.images(DEFAULT_KIND)
            async with asyncio.timeout(5):
                body["images"] = await asyncio.to_thread(budget.budget_status)
    return JSONResponse(body, status_code=200 if ok else 503)
