"""REST for real datasets: list ids, prefetch, verify, verification results, the image budget.

Operator plane (registered with the operator dependency); what creates work (verify, prefetch,
applying the image budget) needs the operator token even on an open plane. ``arena tasks``
calls these, so the CLI works against a remote green. Kind-neutral: each kind offers its dataset work through
``services/green/kinds/datasets.py`` (``services/green/assessments/dataset_tools.py``); a task is named by
its reference (a bare id is an ARVO id), a kind that offers no dataset tools gets a 404 naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, HTTPException, Query, Request, status
from pydantic import BaseModel, Field

from services.green.api.deps import OperatorTokenDep
from services.green.api.verification import dataset_tools, latest_verifications
from services.green.assessments.dataset_tools import NotOffered
from services.green.kinds.errors import AssetError, UnknownTask
from services.green.kinds.registry import parse_ref
from services.green.store.models import TaskVerification
from services.sandbox.base import EngineUnreachable, SandboxError, SandboxTimeout
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error
from services.shared.task_ref import DEFAULT_KIND, TaskRef

router = APIRouter(prefix="/datasets", tags=["datasets"])
MAX_REFS = 2000
T = TypeVar("T")
KindQuery = Annotated[str, Query(description="A task kind, e.g. arvo", max_length=40)]


class RefBody(BaseModel):
    task: str = Field(
        examples=["arvo:10055"], description="A task reference: '<kind>:<id>' ('<n>': arvo:<n>)"
    )


class PrefetchBody(RefBody):
    dry_run: bool = False
    """Only say what it would fetch and how large it is."""


def _ref(text: str) -> TaskRef:
    try:
        return parse_ref(text)
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc


ENGINE_RETRY_S = 60
"""``Retry-After`` of a 503 for an engine that did not answer in time."""


async def _offered(work: Callable[[], T]) -> T:
    """Run blocking dataset work in a thread; a kind without the tool: its 404/503 sentence; a
    Docker engine that did not answer in time (a loaded engine): 503 with ``Retry-After``, one
    that failed otherwise: 502, each with a sentence (never a 500)."""
    try:
        return await asyncio.to_thread(work)
    except NotOffered as exc:
        raise HTTPException(exc.status, str(exc)) from exc
    except (SandboxError, *ENGINE_ERRORS) as exc:
        raise _engine_failure(exc) from exc


def _engine_failure(exc: BaseException) -> HTTPException:
    """A Docker engine that did not answer in time or at all (``EngineUnreachable``,
    ``SandboxTimeout``): 503 with ``Retry-After``; one that answered with an error: 502."""
    seam = engine_error(exc, "the dataset work")
    if isinstance(seam, EngineUnreachable | SandboxTimeout):
        return HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"the Docker engine did not answer in time ({type(exc).__name__}): it is busy or "
            "unreachable; try again in a minute",
            headers={"Retry-After": str(ENGINE_RETRY_S)},
        )
    return HTTPException(status.HTTP_502_BAD_GATEWAY, str(seam)[:500])


@router.get("/ids")
async def list_ids(request: Request, kind: KindQuery = DEFAULT_KIND) -> dict[str, Any]:
    """The task ids the kind's source holds (a local folder can list them; HTTP cannot)."""
    ids = await _offered(lambda: dataset_tools(request).ids(kind))
    if ids is None:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"the {kind} kind's source cannot list its tasks (HTTP): give the population as a file",
        )
    return {"kind": kind, "ids": ids, "total": len(ids)}


@router.post("/prefetch")
async def prefetch_one(body: PrefetchBody, request: Request, _: OperatorTokenDep) -> dict[str, Any]:
    """Fetch one task's files into green's cache and pull its image (or, dry, size them)."""
    ref = _ref(body.task)
    try:
        return await _offered(lambda: dataset_tools(request).prefetch(ref, body.dry_run))
    except UnknownTask as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown task {ref}: {exc}") from exc
    except AssetError as exc:
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, str(exc)) from exc


@router.post("/verify", response_model=TaskVerification)
async def verify_one(body: RefBody, request: Request, _: OperatorTokenDep) -> TaskVerification:
    """Certify one task (blocks for the whole check: e.g. reproduce, fix, ground truth)."""
    ref = _ref(body.task)
    return await _offered(lambda: dataset_tools(request).verify(ref))


@router.get("/verifications", response_model=list[TaskVerification])
async def verifications(
    request: Request, task: Annotated[list[str], Query(max_length=MAX_REFS)]
) -> list[TaskVerification]:
    """The newest verification of each task given (tasks never verified are absent); ``ref``
    in a row is the id within its ``kind``."""
    refs = {_ref(t) for t in task}
    found = await latest_verifications(request, refs)
    return [found[r] for r in sorted(found)]


@router.get("/images")
async def images(request: Request, kind: KindQuery = DEFAULT_KIND) -> dict[str, Any]:
    """The kind's task images on the engines (least recently used first) and the budget."""
    return await _offered(lambda: dataset_tools(request).images(kind).images())


@router.post("/images/enforce")
async def enforce(
    request: Request, _: OperatorTokenDep, kind: KindQuery = DEFAULT_KIND
) -> dict[str, Any]:
    """Apply the kind's image budget now; returns the removed tags."""
    return {"removed": await _offered(lambda: dataset_tools(request).images(kind).enforce())}
