"""REST twin of the AgentBeats assessment: POST /assessments, GET /assessments/{id}."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse

from services.green.api.deps import (
    AssessmentsDep,
    AssessmentStoreDep,
    DatabaseDep,
    DisclosureDep,
    IntakeDep,
    OperatorDep,
    admit,
)
from services.green.api.verification import keep_verified
from services.green.assessments.runner import AssessmentRequest, UnknownTasks
from services.green.kinds.errors import UnknownTask
from services.green.store.models import AssessmentRecord

router = APIRouter(prefix="/assessments", tags=["assessments"])
_background: set[asyncio.Task[None]] = set()


def refused(exc: UnknownTasks) -> JSONResponse:
    """404 naming every task green does not know (``unknown``: each reference with its kind's
    reason, which says how to build or fetch it where green knows): nothing was started, and
    none of them is scored."""
    unknown = [{"task": ref, "reason": why} for ref, why in exc.reasons.items()]
    return JSONResponse(
        {"detail": str(exc), "unknown": unknown}, status_code=status.HTTP_404_NOT_FOUND
    )


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    responses={404: {"description": "Tasks green does not know: all named, nothing started"}},
)
async def create_assessment(
    request: Request,
    body: AssessmentRequest,
    runner: AssessmentsDep,
    who: OperatorDep,
    intake: IntakeDep,
) -> Any:
    await admit(intake, who, body.task_ids, body.trials)
    left_out = await keep_verified(request, body) if body.verified_only else []
    aid = str(uuid.uuid4())
    try:
        tasks = await runner.start(body, aid)  # the runner writes the assessment's record
    except UnknownTasks as exc:
        return refused(exc)
    except UnknownTask as exc:  # its files went away between the check and the task
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown task {exc}") from exc
    except ValueError as exc:  # e.g. a task kind this green does not serve
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc

    async def finish() -> None:
        await runner.follow(tasks)  # and finishes it

    job = asyncio.create_task(finish())
    _background.add(job)
    job.add_done_callback(_background.discard)
    return {
        "id": aid,
        "status": "running",
        "task_ids": [t.id for t in tasks],
        **({"left_out": [str(ref) for ref in left_out]} if body.verified_only else {}),
    }


@router.get("/{assessment_id}")
async def get_assessment(
    assessment_id: str,
    store: AssessmentStoreDep,
    show: DisclosureDep,
    db: DatabaseDep,
    runner: AssessmentsDep,
) -> AssessmentRecord:
    rec = await db.run(store.get, assessment_id)
    if rec is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no assessment {assessment_id}")
    if rec.result:
        rec.result = await show.result(rec.result, runner.aggregate)
    return rec
