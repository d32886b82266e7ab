"""Typed dependencies: handlers state what they need in their signature.

Each is a coroutine function: FastAPI runs a plain function dependency in a worker thread (a
thread hop per dependency and request, queued behind 40 tokens under load), a coroutine on the
event loop; none of them blocks."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from services.green.assessments.runner import AssessmentRunner
from services.green.edge.auth import Caller, OperatorAuth
from services.green.edge.disclosure import Disclosure
from services.green.edge.intake_limits import BugBusy, IntakeLimits, TooBusy
from services.green.store.crud import AssessmentStore
from services.green.store.offloop import Database
from services.green.tasks.orchestrator import Orchestrator
from services.shared.task_ref import TaskRef


async def _orchestrator(request: Request) -> Orchestrator:
    return request.app.state.orchestrator


async def _assessments(request: Request) -> AssessmentRunner:
    return request.app.state.assessments


async def _assessment_store(request: Request) -> AssessmentStore:
    return request.app.state.assessment_store


async def _database(request: Request) -> Database:
    return request.app.state.orchestrator.db


OrchestratorDep = Annotated[Orchestrator, Depends(_orchestrator)]
AssessmentsDep = Annotated[AssessmentRunner, Depends(_assessments)]
AssessmentStoreDep = Annotated[AssessmentStore, Depends(_assessment_store)]
DatabaseDep = Annotated[Database, Depends(_database)]
"""Green's database calls, off the event loop (``await db.run(store.method, ...)``)."""


async def caller(request: Request) -> Caller:
    """Who sent this request (the operator token in ``Authorization: Bearer``, or nobody)."""
    auth: OperatorAuth = request.app.state.auth
    return auth.caller(request.headers.get("authorization"))


CallerDep = Annotated[Caller, Depends(caller)]


async def require_operator(who: CallerDep) -> Caller:
    """The operator plane needs the operator token (unless GREEN_OPEN_OPERATOR_PLANE is on)."""
    if not who.may_operate:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "this is the operator's API: send 'Authorization: Bearer <operator token>' "
            "(see GREEN_API_TOKEN_FILE on green's machine)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return who


OperatorDep = Annotated[Caller, Depends(require_operator)]


async def require_operator_token(who: CallerDep) -> Caller:
    """Work green does for the operator that no task asked for (verifying a task, prefetching
    its assets and image, removing images): the operator token even on an open plane, where
    anyone may otherwise create tasks. Each costs green builds, downloads or the images other
    tasks need, and none is bounded by the intake's limits."""
    if not who.operator:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "this creates work only the operator may ask for, even on an open operator plane: "
            "send 'Authorization: Bearer <operator token>' (see GREEN_API_TOKEN_FILE on green's "
            "machine)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return who


OperatorTokenDep = Annotated[Caller, Depends(require_operator_token)]


async def _disclosure(request: Request, who: OperatorDep) -> Disclosure:
    orch = request.app.state.orchestrator
    return Disclosure(orch.store, orch.db, who)


DisclosureDep = Annotated[Disclosure, Depends(_disclosure)]


async def _intake(request: Request) -> IntakeLimits:
    return request.app.state.intake


IntakeDep = Annotated[IntakeLimits, Depends(_intake)]


async def admit(intake: IntakeLimits, who: Caller, refs: list[TaskRef], trials: int = 1) -> None:
    """Apply the intake bounds, as HTTP errors (429 with Retry-After, 409, or 422)."""
    try:
        await intake.admit(who, refs, trials)
    except BugBusy as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
    except TooBusy as exc:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            str(exc),
            headers={"Retry-After": str(exc.retry_after)},
        ) from exc
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
