"""What the stored verifications mean for the other routes: the ``verified`` flag of a task view
and ``verified_only`` assessments. Kind-neutral: any kind's verifications count alike."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import HTTPException, Request, status

from services.green.assessments.dataset_tools import DatasetTools
from services.green.assessments.runner import AssessmentRequest
from services.shared.task_ref import TaskRef


def dataset_tools(request: Request) -> DatasetTools:
    return request.app.state.datasets


async def latest_verifications(request: Request, refs: Iterable[TaskRef]) -> dict[TaskRef, Any]:
    """The newest stored verification of each of ``refs`` that has one."""
    db = request.app.state.orchestrator.db
    return await db.run(dataset_tools(request).latest, list(refs))


async def keep_verified(request: Request, body: AssessmentRequest) -> list[TaskRef]:
    """Drop from ``body.task_ids`` the tasks not verified; return the ones left out (422 when
    none is left)."""
    found = await latest_verifications(request, set(body.task_ids))
    ok = {ref for ref in body.task_ids if ref in found and found[ref].verified}
    left_out = [ref for ref in body.task_ids if ref not in ok]
    body.task_ids = [ref for ref in body.task_ids if ref in ok]
    if not body.task_ids:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            "verified_only: none of these tasks is verified (run arena tasks verify)",
        )
    return left_out


async def annotate_verified(request: Request, views: list[Any]) -> None:
    """Set ``verified`` on the task views whose task was verified (else it stays None)."""
    refs = (TaskRef(v.kind, v.ref_id) for v in views)
    mark_verified(views, await latest_verifications(request, refs))


def mark_verified(views: list[Any], found: dict[TaskRef, Any]) -> None:
    """:func:`annotate_verified` with the verifications already read (``latest_verifications``)."""
    for view in views:
        row = found.get(TaskRef(view.kind, view.ref_id))
        if row is not None:
            view.verified = row.verified
