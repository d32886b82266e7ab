"""REST: a named run whose client starts the tasks itself (``arena run``): POST /runs, its end.

A run is an assessment record (the dashboard's runs page, ``GET /assessments/{id}``) whose tasks
the client creates one by one, at its own pace, with ``POST /tasks {"run_id": ...}``, and which
the client ends when it stops (``POST /runs/{id}/end``). Opening one checks every task first:
tasks green does not know are refused together, each named with how to get it, before anything
is recorded, so none of them ever enters a mean.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, status
from pydantic import BaseModel, Field

from services.green.api.deps import (
    AssessmentsDep,
    AssessmentStoreDep,
    IntakeDep,
    OperatorDep,
    OrchestratorDep,
    admit,
)
from services.green.api.routes.assessments import refused
from services.green.assessment import UnknownTasks
from services.green.intake_limits import allowed_purple
from services.green.kinds.registry import CheckedRef
from services.green.store.crud import AssessmentStore
from services.green.store.models import AssessmentRecord, TaskStatus
from services.green.store.offloop import Database

router = APIRouter(prefix="/runs", tags=["runs"])

CLIENT_RUN = "client run"
"""``request["source"]`` of an assessment record opened by ``POST /runs``."""
RunId = Annotated[str, Path(pattern=r"^[0-9a-f-]{36}$", description="The run's id (a UUID)")]


class RunOpen(BaseModel):
    name: str = Field(min_length=1, max_length=120, pattern=r"^[^\x00-\x1f\x7f]+$")
    """The run's name (``arena run --run``), shown on the dashboard."""
    task_ids: list[CheckedRef] = Field(min_length=1, max_length=100_000)
    """Every task the run will start (at most GREEN_MAX_ASSESSMENT_TASKS distinct ones)."""
    purple_url: str | None = None
    trials: int = Field(1, ge=1, le=100)
    resume: Annotated[str | None, Field(pattern=r"^[0-9a-f-]{36}$")] = None
    """The id of this run, opened earlier: it is opened again (a resumed ``arena run``)."""


class RunEnd(BaseModel):
    interrupted: bool = False
    """The client stopped before every task ended (its record ends ``cancelled``)."""


async def client_run(db: Database, store: AssessmentStore, run_id: str) -> AssessmentRecord:
    """The record of a run opened by ``POST /runs`` (404 for any other id)."""
    rec = await db.run(store.get, run_id)
    if rec is None or (rec.request or {}).get("source") != CLIENT_RUN:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id} opened by POST /runs")
    return rec


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={404: {"description": "Tasks green does not know: all named, nothing recorded"}},
)
async def open_run(
    body: RunOpen,
    runner: AssessmentsDep,
    store: AssessmentStoreDep,
    orch: OrchestratorDep,
    who: OperatorDep,
    intake: IntakeDep,
) -> Any:
    """Open a named run: every task is checked, then an assessment record is written (or the
    run named by ``resume`` is opened again). Its tasks join it with ``POST /tasks``'s
    ``run_id``."""
    await admit(intake, who, [])  # the rate per credential; the tasks are admitted one by one
    distinct = list(dict.fromkeys(body.task_ids))
    if len(distinct) > intake.max_batch:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"{len(distinct)} task ids in one run; at most {intake.max_batch} "
            "(GREEN_MAX_ASSESSMENT_TASKS)",
        )
    try:
        purple = allowed_purple(orch.settings, body.purple_url)
        await runner.check(distinct)
    except UnknownTasks as exc:
        return refused(exc)
    except ValueError as exc:  # a kind this green does not serve, a purple it may not call
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    request = {
        "source": CLIENT_RUN,
        "name": body.name,
        "task_ids": [str(r) for r in distinct],
        "trials": body.trials,
    }
    if body.resume is not None:
        rec = await client_run(orch.db, store, body.resume)
        await orch.db.run(
            store.update, rec.id, status=TaskStatus.running, finished_at=None, request=request
        )
        return {"id": rec.id, "name": body.name, "status": "running"}
    rid = str(uuid.uuid4())
    record = AssessmentRecord(
        id=rid, purple_url=purple, request=request, owner=orch.settings.instance_name
    )
    await orch.db.run_to_end(store.add, record)  # a 503 means no run was opened
    return {"id": rid, "name": body.name, "status": "running"}


@router.post("/{run_id}/end")
async def end_run(
    run_id: RunId,
    body: RunEnd,
    runner: AssessmentsDep,
    store: AssessmentStoreDep,
    orch: OrchestratorDep,
) -> dict[str, str]:
    """The client has stopped: the record ends with the aggregate over the run's tasks
    (``cancelled`` when the client was interrupted, else ``completed``). The answer is its id
    and status only: its results are read at ``GET /assessments/{id}``, under the disclosure
    rule."""
    await client_run(orch.db, store, run_id)
    tasks = list(
        await orch.db.run(orch.store.run_tasks, run_id, limit=10_000_000, ground_truth=False)
    )

    def result() -> dict[str, Any]:  # the intervals are CPU work: not on the event loop
        return runner.result(run_id, tasks).model_dump(mode="json")

    ended = TaskStatus.cancelled if body.interrupted else TaskStatus.completed
    await runner.record_end(run_id, ended, result=await asyncio.to_thread(result))
    return {"id": run_id, "status": ended.value}
