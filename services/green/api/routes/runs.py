"""REST: a named run whose client starts the tasks itself (``arena run``): POST /runs, its end.

A run is an assessment record (the dashboard's runs page, ``GET /assessments/{id}``) whose tasks
the client creates one by one, at its own pace, with ``POST /tasks {"run_id": ...}``, and which
the client ends when it stops (``POST /runs/{id}/end``). Opening one checks every task first:
tasks green does not know are refused together, each named with how to get it, before anything
is recorded, so none of them ever enters a mean.

A run belongs to the credential that opened it: only that credential, or the operator, adds tasks
to it, resumes it or ends it (and cancels its tasks). A caller other than the operator (the plane
opened) that sent a bearer credential of its own owns its run by it; one that sent none is given a
``key`` in the answer, its run's own credential, to send as ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
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
from services.green.assessments.runner import UnknownTasks
from services.green.edge.auth import Caller
from services.green.edge.intake_limits import allowed_purple
from services.green.kinds.registry import CheckedRef
from services.green.store.crud import AssessmentStore
from services.green.store.models import AssessmentRecord, Task, TaskStatus
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


OPENED_BY = "opened_by"
"""``request[OPENED_BY]`` of a client run: :data:`OPERATOR`, or the SHA-256 of the credential
that opened it (:attr:`Caller.key`)."""
OPERATOR = "operator"


async def client_run(
    db: Database, store: AssessmentStore, run_id: str, who: Caller
) -> AssessmentRecord:
    """The record of a run opened by ``POST /runs`` (404 for any other id), if ``who`` may change
    it: the operator, or the credential that opened it (403 with a sentence for anyone else)."""
    rec = await db.run(store.get, run_id)
    if rec is None or not is_client_run(rec):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id} opened by POST /runs")
    if not owns(who, rec):
        raise HTTPException(status.HTTP_403_FORBIDDEN, not_yours(run_id))
    return rec


def is_client_run(rec: AssessmentRecord) -> bool:
    return (rec.request or {}).get("source") == CLIENT_RUN


def owns(who: Caller, rec: AssessmentRecord) -> bool:
    """Whether ``who`` may change the client run ``rec``, its tasks included."""
    return who.operator or (who.key is not None and (rec.request or {}).get(OPENED_BY) == who.key)


async def refuse_foreign_task(
    db: Database, store: AssessmentStore, who: Caller, task: Task
) -> None:
    """403 unless ``who`` may change ``task``: the operator, or, for a task of a client run, the
    credential that opened the run."""
    if task.assessment_id is None or who.operator:
        return
    run = await db.run(store.get, task.assessment_id)
    if run is not None and is_client_run(run) and not owns(who, run):
        raise HTTPException(status.HTTP_403_FORBIDDEN, not_yours(run.id))


def not_yours(run_id: str) -> str:
    return (
        f"run {run_id} belongs to the credential that opened it: only it, or the operator, may "
        "add tasks to it, resume it, end it or cancel its tasks"
    )


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
        rec = await client_run(orch.db, store, body.resume, who)
        request[OPENED_BY] = (rec.request or {}).get(OPENED_BY)
        await orch.db.run(
            store.update, rec.id, status=TaskStatus.running, finished_at=None, request=request
        )
        return {"id": rec.id, "name": body.name, "status": "running"}
    answer: dict[str, Any] = {}
    if who.operator:
        request[OPENED_BY] = OPERATOR
    elif who.key is not None:
        request[OPENED_BY] = who.key
    else:  # no credential of its own: the run's key is one
        answer["key"] = secrets.token_urlsafe(32)
        request[OPENED_BY] = hashlib.sha256(answer["key"].encode()).hexdigest()
    rid = str(uuid.uuid4())
    record = AssessmentRecord(
        id=rid, purple_url=purple, request=request, owner=orch.settings.instance_name
    )
    await orch.db.run_to_end(store.add, record)  # a 503 means no run was opened
    return {"id": rid, "name": body.name, "status": "running", **answer}


@router.post("/{run_id}/end")
async def end_run(
    run_id: RunId,
    body: RunEnd,
    runner: AssessmentsDep,
    store: AssessmentStoreDep,
    orch: OrchestratorDep,
    who: OperatorDep,
) -> dict[str, str]:
    """The client has stopped: the record ends with the aggregate over the run's tasks
    (``cancelled`` when the client was interrupted, else ``completed``). The answer is its id
    and status only: its results are read at ``GET /assessments/{id}``, under the disclosure
    rule. 409 while a task of the run is unfinished: an aggregate is made of ended tasks only."""
    await client_run(orch.db, store, run_id, who)
    tasks = list(
        await orch.db.run(orch.store.run_tasks, run_id, limit=10_000_000, ground_truth=False)
    )
    if running := [t for t in tasks if not t.status.terminal]:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"{len(running)} task(s) of run {run_id} have not ended (task {running[0].id} is "
            f"{running[0].status.value}): end the run once they have (cancel them with "
            "POST /tasks/{id}/cancel to stop now)",
        )

    def result() -> dict[str, Any]:  # the intervals are CPU work: not on the event loop
        return runner.result(run_id, tasks).model_dump(mode="json")

    ended = TaskStatus.cancelled if body.interrupted else TaskStatus.completed
    await runner.record_end(run_id, ended, result=await asyncio.to_thread(result))
    return {"id": run_id, "status": ended.value}
