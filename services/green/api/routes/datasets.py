"""REST for real datasets: list ids, prefetch, verify, verification results, the image budget.

Operator plane (registered with the operator dependency). ``arena tasks`` calls these, so the
CLI works against a remote green.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, status
from pydantic import BaseModel, Field, field_validator

from services.green.assessment import AssessmentRequest
from services.green.kinds.arvo.assets.ids import parse_arvo_id
from services.green.kinds.arvo.datasets.service import Datasets
from services.green.kinds.errors import AssetError, UnknownTask
from services.green.store.models import TaskVerification
from services.sandbox.base import SandboxError
from services.shared.task_ref import TaskRef

router = APIRouter(prefix="/datasets", tags=["datasets"])
MAX_REFS = 2000


def _datasets(request: Request) -> Datasets:
    datasets = getattr(request.app.state, "datasets", None)
    if datasets is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "dataset tools need green's Docker engine and the arvo task kind",
        )
    return datasets


def keep_verified(request: Request, body: AssessmentRequest) -> list[TaskRef]:
    """Drop from ``body.task_ids`` the tasks not verified; return the ones left out (422 when
    none is left)."""
    datasets = _datasets(request)
    arvo = {ref: ref.id for ref in body.task_ids if ref.kind == "arvo"}
    found = datasets.verifications.latest(set(arvo.values()))
    ok = {ref for ref, n in arvo.items() if n in found and found[n].verified}
    left_out = [ref for ref in body.task_ids if ref not in ok]
    body.task_ids = [ref for ref in body.task_ids if ref in ok]
    if not body.task_ids:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            "verified_only: none of these tasks is verified (run arena tasks verify)",
        )
    return left_out


def annotate_verified(request: Request, views: list[Any]) -> None:
    """Set ``verified`` on task views of the arvo kind that were verified (else left None)."""
    datasets = getattr(request.app.state, "datasets", None)
    if datasets is None:
        return
    found = datasets.verifications.latest({v.ref_id for v in views if v.kind == "arvo"})
    for view in views:
        if view.kind == "arvo" and view.ref_id in found:
            view.verified = found[view.ref_id].verified


class RefBody(BaseModel):
    task: str = Field(examples=["arvo:10055"], description="An ARVO task: 'arvo:<n>' or '<n>'")

    @field_validator("task")
    @classmethod
    def _arvo(cls, v: str) -> str:
        return parse_arvo_id(v)


class PrefetchBody(RefBody):
    dry_run: bool = False
    """Only say what it would fetch and how large it is."""


@router.get("/ids")
async def list_ids(request: Request) -> dict[str, Any]:
    """The task ids the asset source holds (a local folder can list them; HTTP cannot)."""
    ids = _datasets(request).known_ids()
    if ids is None:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            "green's asset source cannot list its tasks (HTTP): give the population as a file",
        )
    return {"ids": ids, "total": len(ids)}


@router.post("/prefetch")
async def prefetch_one(body: PrefetchBody, request: Request) -> dict[str, Any]:
    """Fetch one task's files into green's cache and pull its image (or, dry, size them)."""
    datasets = _datasets(request)
    try:
        return await asyncio.to_thread(datasets.prefetch, body.task, body.dry_run)
    except UnknownTask as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown task {body.task}: {exc}") from exc
    except (AssetError, SandboxError) as exc:
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, str(exc)) from exc


@router.post("/verify", response_model=TaskVerification)
async def verify_one(body: RefBody, request: Request) -> TaskVerification:
    """Certify one task (blocks for the whole check: reproduce, fix, ground truth)."""
    return await asyncio.to_thread(_datasets(request).verify, body.task)


@router.get("/verifications", response_model=list[TaskVerification])
async def verifications(
    request: Request, task: Annotated[list[str], Query(max_length=MAX_REFS)]
) -> list[TaskVerification]:
    """The newest verification of each task given (tasks never verified are absent)."""
    try:
        refs = {parse_arvo_id(t) for t in task}
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    found = _datasets(request).verifications.latest(refs)
    return [found[r] for r in sorted(found)]


@router.get("/images")
async def images(request: Request) -> dict[str, Any]:
    """Task images on the engine (least recently used first) and the budget."""
    budget = _datasets(request).budget
    listed = await asyncio.to_thread(budget.task_images)
    state = await asyncio.to_thread(budget.status)
    return {**state.to_dict(), "task_images": [vars(i) for i in listed]}


@router.post("/images/enforce")
async def enforce(request: Request) -> dict[str, Any]:
    """Apply the budget now; returns the removed tags."""
    removed = await asyncio.to_thread(_datasets(request).budget.enforce)
    return {"removed": removed}
