"""The comparison page ``/ui/compare?runs=A,B[,C...]``: the first assessment against each other
one on the tasks both scored (per metric found in their scores, any kind), with the same paired
logic as ``arena compare`` (:mod:`services.shared.paired`): per metric the difference with the
95% interval and p-value of one sign-flip test, win/loss/tie; every task not scored by both
(lost to infra, not ended, not in a run, unscorable) listed apart with each side's reason.
Refused, with a sentence per task, when a task's scoring rule, image, assets or ground truth
differ between the runs or a compared task has no provenance
(:mod:`services.shared.comparable`), unless ``force=1``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, Response

from services.green.kinds.base import TaskKind
from services.green.kinds.metrics import continuous_metrics, declared_metrics
from services.green.store.models import AssessmentRecord, Task
from services.green.ui.auth import disclosure, require_page
from services.green.ui.runs import run_record, run_tasks_of
from services.green.ui.templating import render
from services.green.ui.views import NO_RUN, run_name
from services.shared import comparable, paired, signflip, stats

router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_page)])
MAX_RUNS = 6


def _attempt(t: Task, shown: bool) -> paired.Attempt:
    """``t`` as the comparison counts it; one whose scores the viewer may not see now
    (:meth:`Disclosure.scored`) counts as not ended."""
    provenance = comparable.decisive_of(t.provenance) if t.provenance else None
    if not (t.status.terminal and shown):
        status_, why = (
            ("withheld", "a task of its bug is unfinished")
            if t.status.terminal
            else (t.status.value, "not ended yet")
        )
        return paired.Attempt(str(t.ref), status_, end_reason=why, provenance=provenance)
    return paired.Attempt(
        task=str(t.ref),
        status=t.status.value,
        failure_kind=t.failure_kind.value if t.failure_kind else None,
        end_reason=t.end_reason,
        scores=t.scores,
        provenance=provenance,
    )


def parse_runs(runs: list[str]) -> list[str]:
    """The assessment ids, from ``runs=A,B`` or ``runs=A&runs=B`` (the runs page's checkboxes)."""
    ids = [r.strip() for value in runs for r in value.split(",") if r.strip()]
    if len(ids) < 2:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            "a comparison needs at least two assessment ids: ?runs=<id>,<id>",
        )
    if len(ids) > MAX_RUNS:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"at most {MAX_RUNS} runs are compared at once"
        )
    if len(set(ids)) != len(ids):
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, "the same run is named twice; name two runs"
        )
    return ids


@router.get("/compare", response_class=HTMLResponse)
async def compare(
    request: Request,
    runs: Annotated[list[str], Query(max_length=400)] = [],  # noqa: B006 (FastAPI copies it)
    force: Annotated[bool, Query()] = False,
) -> Response:
    ids = parse_runs(runs)
    records = {run_id: await run_record(request, run_id) for run_id in ids}  # 404 if unknown
    tasks = {run_id: await run_tasks_of(request, run_id) for run_id in ids}
    show = disclosure(request)
    scored = {t.id for r in ids for t in await show.scored(tasks[r])}
    attempts = {r: [_attempt(t, t.id in scored) for t in tasks[r]] for r in ids}
    conflicts = comparable.problems([(r, attempts[r]) for r in ids])
    context = {
        "ids": ids,
        "labels": {r: _label(r, records[r]) for r in ids},
        "records": records,
        "conflicts": conflicts,
        "forced": force and bool(conflicts),
        "level": stats.LEVEL,
        "exact_up_to": signflip.EXACT_UP_TO,
        "draws": signflip.DRAWS,
        "pairs": [],
    }
    if conflicts and not force:
        return render(request, "compare.html", status.HTTP_409_CONFLICT, **context)
    names = sorted({t.kind for r in ids for t in tasks[r]})
    served = {kind: _kinds(request, {kind}) for kind in names}

    def pairs() -> list[dict]:
        """Per kind of the compared tasks, the first run against each other on that kind's tasks
        only (each metric over its own kind's tasks)."""
        out = []
        for kind in names:
            declared = served[kind]
            views = [
                paired.run_view(
                    r,
                    dict.fromkeys(str(t.ref) for t in tasks[r] if t.kind == kind),
                    [a for a, t in zip(attempts[r], tasks[r], strict=True) if t.kind == kind],
                    declared_metrics(declared),
                    continuous_metrics(declared),
                )
                for r in ids
            ]
            out += [
                {**paired.compare_pair(views[0], v), "kind": kind if len(names) > 1 else None}
                for v in views[1:]
            ]
        return out

    # the sign-flip tests take up to a few tenths of a second per pair: not on the event loop
    context["pairs"] = await asyncio.to_thread(pairs)
    return render(request, "compare.html", **context)


def _kinds(request: Request, names: set[str]) -> list[TaskKind]:
    """The kinds of the compared tasks that this green serves (their metric declarations)."""
    served = request.app.state.orchestrator.kinds
    return [served[n] for n in sorted(names) if n in served]


def _label(run_id: str, record: AssessmentRecord | None) -> str:
    """A run by its name (``arena run --run``), else its id's prefix."""
    if run_id == NO_RUN or record is None:
        return "single tasks" if run_id == NO_RUN else run_id[:8]
    return run_name(record)
