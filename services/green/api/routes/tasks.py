"""REST: POST/GET /tasks, GET /tasks/{id}, its commands, purple's trajectory of it, cancel."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal, NoReturn

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, ValidationError, model_validator

from services.green.api.deps import (
    AssessmentStoreDep,
    DisclosureDep,
    IntakeDep,
    OperatorDep,
    OrchestratorDep,
    admit,
)
from services.green.api.query_bounds import MAX_OFFSET
from services.green.api.routes.runs import client_run, refuse_foreign_task
from services.green.api.verification import (
    annotate_verified,
    latest_verifications,
    mark_verified,
)
from services.green.edge.disclosure import Disclosure
from services.green.kinds.errors import UnknownTask
from services.green.kinds.registry import CheckedRef, parse_ref
from services.green.store.errors import STORAGE_ERRORS, brief
from services.green.store.models import CommandPublic, Task, TaskList, TaskPublic, TaskStatus
from services.green.tasks.live_task import TaskNotFound
from services.green.tasks.orchestrator import Orchestrator, TaskIdTaken, TaskOptions
from services.green.tasks.trajectory import fetch_trajectory
from services.shared.atif import atif_json
from services.shared.logging import get_logger
from services.shared.task_ref import TaskRef
from services.shared.trajectory import TrajectoryView

router = APIRouter(prefix="/tasks", tags=["tasks"])
log = get_logger(__name__)


class TaskCreate(BaseModel):
    id: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        description=(
            "The new task's id, of the client's choosing (a UUID, lower case): posted again, "
            "it answers 200 with the task it made instead of making another (409 if asked "
            "with other parameters), so a request whose answer was lost can safely be sent again"
        ),
    )
    task: CheckedRef | None = Field(
        None, examples=["arvo:10055"], description="'arvo:<n>', '<n>' or 'swebench:<instance id>'"
    )
    arvo_id: CheckedRef | None = Field(
        None, examples=[10055], description="Deprecated: an ARVO id (use task)"
    )
    purple_url: str | None = Field(
        None, description="A2A base URL of the agent (default: settings)"
    )
    max_steps: int | None = Field(None, ge=1, le=10_000)
    task_timeout_s: float | None = Field(None, gt=0, le=86_400)
    command_timeout_s: float | None = Field(None, gt=0, le=3_600)
    trial: int = Field(1, ge=1, le=1_000, description="Which repeated attempt this is (1..K)")
    run_id: str | None = Field(
        None,
        pattern=r"^[0-9a-f-]{36}$",
        description="The run (POST /runs) this task belongs to: on the dashboard under its name",
    )

    @model_validator(mode="after")
    def _one_id(self) -> TaskCreate:
        if self.task is None:
            self.task = self.arvo_id
        if self.task is None:
            raise ValueError("give 'task' (e.g. \"arvo:10055\") or 'arvo_id' (e.g. 10055)")
        return self


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=TaskPublic,
    responses={200: {"description": "The task this id made before (its state now)"}},
)
async def create_task(
    request: Request,
    response: Response,
    body: TaskCreate,
    orch: OrchestratorDep,
    who: OperatorDep,
    intake: IntakeDep,
    show: DisclosureDep,
    store: AssessmentStoreDep,
) -> TaskPublic:
    assert body.task is not None  # the model's validator saw to it
    opts = TaskOptions(
        purple_url=body.purple_url,
        max_steps=body.max_steps,
        task_timeout_s=body.task_timeout_s,
        command_timeout_s=body.command_timeout_s,
        trial=body.trial,
        assessment_id=body.run_id,
    )
    try:
        await admit(intake, who, [body.task])
    except HTTPException:  # a post sent again makes no task: a bound on new ones cannot refuse it
        if body.id is None or not (found := await _made_before(orch, body.id, body.task, opts)):
            raise
        response.status_code = status.HTTP_200_OK
        return await _answer(show, found, await _marks(request, body.task))
    if body.run_id is not None:
        await client_run(orch.db, store, body.run_id, who)  # 404 unless POST /runs opened it
    # the verification is read while the task is recorded (one wait for the database); the
    # answer waits for the insert's outcome, and a refusal of the task comes before a failed read
    made, verifications = await asyncio.gather(
        _create(orch, body, opts),
        latest_verifications(request, [body.task]),
        return_exceptions=True,
    )
    if isinstance(made, BaseException):
        _refuse(body.task, made)
    task, new = made
    if not new:
        response.status_code = status.HTTP_200_OK
    return await _answer(show, task, verifications)


async def _answer(
    show: Disclosure, task: Task, verifications: dict[TaskRef, Any] | BaseException
) -> TaskPublic:
    """The view of a task intake made (or found), marked as verified or not."""
    view = await show.task(task)
    # the task exists now: a 503 for a failed read would have the client post it again
    if isinstance(verifications, STORAGE_ERRORS):
        log.warning("intake.verification_unread", task_id=task.id, error=brief(verifications))
    elif isinstance(verifications, BaseException):
        raise verifications
    else:
        mark_verified([view], verifications)
    return view


async def _marks(request: Request, ref: TaskRef) -> dict[TaskRef, Any] | BaseException:
    """The task's verification, or the storage error that kept it unread."""
    try:
        return await latest_verifications(request, [ref])
    except STORAGE_ERRORS as exc:
        return exc


async def _made_before(
    orch: Orchestrator, task_id: str, ref: TaskRef, opts: TaskOptions
) -> Task | None:
    try:
        return await orch.made_before(task_id, ref, opts)
    except (TaskIdTaken, UnknownTask, ValueError) as exc:
        _refuse(ref, exc)


def _refuse(ref: TaskRef, exc: BaseException) -> NoReturn:
    """The answer to a task green would not make (404, 409, 422), or ``exc`` raised again."""
    if isinstance(exc, UnknownTask):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown task {ref}: {exc}") from exc
    if isinstance(exc, TaskIdTaken):
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
    if isinstance(exc, ValueError):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    raise exc


async def _create(orch: Orchestrator, body: TaskCreate, opts: TaskOptions) -> tuple[Task, bool]:
    """The task, and whether this request made it (a client's id finds the task it made)."""
    assert body.task is not None
    if body.id is None:
        return await orch.create_task(body.task, opts), True
    return await orch.create_once(body.id, body.task, opts)


@router.get("", response_model=TaskList)
async def list_tasks(
    request: Request,
    orch: OrchestratorDep,
    show: DisclosureDep,
    status_: Annotated[TaskStatus | None, Query(alias="status")] = None,
    ref: Annotated[str | None, Query(description="A task reference, e.g. arvo:10055")] = None,
    legacy_id: Annotated[
        str | None,
        Query(
            alias="arvo_id",
            deprecated=True,
            description="Deprecated alias: the id within its kind (use ref)",
        ),
    ] = None,
    assessment_id: str | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Any:
    kind, ref_id = None, legacy_id
    if ref is not None:
        try:
            parsed = parse_ref(ref)
        except ValueError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
        kind, ref_id = parsed.kind, parsed.id
    rows, total = await orch.db.run(
        orch.store.list,
        status=status_,
        kind=kind,
        ref_id=ref_id,
        assessment_id=assessment_id,
        offset=offset,
        limit=limit,
    )
    items = await show.tasks(list(rows))
    await annotate_verified(request, items)
    return TaskList(items=items, total=total, offset=offset, limit=limit)


async def _get(orch: OrchestratorDep, task_id: str) -> Task:
    try:
        return await orch.get(task_id)
    except TaskNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from exc


@router.get("/{task_id}", response_model=TaskPublic)
async def get_task(
    task_id: str, orch: OrchestratorDep, show: DisclosureDep, request: Request
) -> TaskPublic:
    view = await show.task(await _get(orch, task_id))
    await annotate_verified(request, [view])
    return view


@router.get("/{task_id}/commands", response_model=list[CommandPublic])
async def get_commands(
    task_id: str,
    orch: OrchestratorDep,
    show: DisclosureDep,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> Any:
    await show.require_shown(await _get(orch, task_id))
    return await orch.db.run(orch.store.commands, task_id, offset, limit)


TrajectoryFormat = Literal["purple", "atif"]
"""``purple``: as purple sent it; ``atif``: converted to ATIF v1.8 (:mod:`services.shared.atif`)."""


@router.get(
    "/{task_id}/trajectory",
    responses={
        200: {"description": "Purple's trajectory of the task: as purple sent it, or as ATIF"},
        403: {"description": "A task of its bug is unfinished: the operator's until it ends"},
        422: {"description": "A format other than purple or atif"},
        502: {"description": "Purple could not give it (unreachable, too large, too slow...)"},
    },
)
async def get_trajectory(
    task_id: str,
    orch: OrchestratorDep,
    show: DisclosureDep,
    format: Annotated[
        TrajectoryFormat,
        Query(description="purple: as purple sent it; atif: as ATIF v1.8 (one document)"),
    ] = "purple",
) -> Response:
    """Purple's trajectory of the task (its ``GET /tasks/{id}/trajectory``), read by green
    within GREEN_TRAJECTORY_MAX_BYTES and GREEN_TRAJECTORY_TIMEOUT_S: a client needs no address
    of purple (``http://purple:9019`` is known only inside compose). ``format=atif`` gives it
    as ATIF v1.8, made of nothing but what purple sent. 502 with a sentence when purple cannot
    give it (or, as ATIF, gives something that is not a trajectory); 403 while a task of its bug
    is unfinished (it shows what the agent wrote: its answer)."""
    task = await _get(orch, task_id)
    await show.require_shown(task)
    settings = orch.settings
    traj, why = await fetch_trajectory(
        task.purple_url, task.id, settings.trajectory_max_bytes, settings.trajectory_timeout_s
    )
    if traj is None:
        return JSONResponse({"detail": why}, status_code=status.HTTP_502_BAD_GATEWAY)
    if format == "purple":
        return Response(traj.raw, media_type="application/json")
    return await asyncio.to_thread(_as_atif, traj.data)  # megabytes of events: off the loop


def _as_atif(data: dict[str, Any]) -> JSONResponse:
    """Purple's trajectory as ATIF; 502 with a sentence when it is not a trajectory (purple is
    not trusted: nothing it sends may make a 500)."""
    try:
        return JSONResponse(atif_json(TrajectoryView.model_validate(data)))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "its root"
        why = f"{where}: {first['msg']}"
    except (ValueError, TypeError) as exc:
        why = f"{type(exc).__name__}: {str(exc)[:300]}"
    detail = f"purple's trajectory is not one green can convert to ATIF ({why})"
    return JSONResponse({"detail": detail}, status_code=status.HTTP_502_BAD_GATEWAY)


@router.post(
    "/{task_id}/cancel",
    response_model=TaskPublic,
    responses={202: {"description": "Another replica runs it: its owner was asked to cancel"}},
)
async def cancel_task(
    task_id: str,
    orch: OrchestratorDep,
    show: DisclosureDep,
    who: OperatorDep,
    store: AssessmentStoreDep,
) -> Any:
    task = await _get(orch, task_id)
    await refuse_foreign_task(orch.db, store, who, task)  # a run's tasks are its owner's
    if task.status.terminal:
        raise HTTPException(status.HTTP_409_CONFLICT, f"task {task_id} already {task.status.value}")
    task = await orch.cancel(task_id)
    if task.status.terminal:
        return await show.task(task)
    note = (
        f"replica {task.owner!r} runs this task: it was asked to cancel it and does so within "
        "seconds (GET the task to see it end)"
    )
    body = {**(await show.task(task)).model_dump(mode="json"), "note": note}
    return JSONResponse(body, status_code=status.HTTP_202_ACCEPTED)
